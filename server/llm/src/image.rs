//! An image the model is shown: its media type and its bytes in base64, the form both wire formats
//! carry, so a request writes it as it is. Shared: the conversation's copies (the request encoder's, the
//! checkpoints', the session saver's) hold one, and comparing two copies is a pointer comparison.
//!
//! How each wire format places it: `anthropic.rs` (an `image` block, inside a `tool_result`'s content
//! for a tool's image), `openai_wire.rs` (an `image_url` data URL in a user message after the tool
//! messages).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone)]
pub struct Image(Arc<Inner>);

struct Inner {
    media_type: String,
    /// The bytes in standard base64, as checked by whoever made the image (`stepwise::images`).
    base64: String,
    id: OnceLock<u64>,
}

impl Image {
    pub fn new(media_type: impl Into<String>, base64: impl Into<String>) -> Image {
        Image(Arc::new(Inner { media_type: media_type.into(), base64: base64.into(), id: OnceLock::new() }))
    }

    /// A name for the image within this process, by its content (a view asks for an image by it):
    /// hashed once, then kept.
    pub fn id(&self) -> String {
        let id = self.0.id.get_or_init(|| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            self.0.media_type.hash(&mut h);
            self.0.base64.hash(&mut h);
            h.finish()
        });
        format!("{id:016x}")
    }

    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub fn media_type(&self) -> &str {
        &self.0.media_type
    }

    pub fn base64(&self) -> &str {
        &self.0.base64
    }

    /// The image as a `data:` URL (OpenAI's `image_url`, a view's `<img>`), written without a copy.
    pub fn data_url(&self) -> DataUrl<'_> {
        DataUrl(self)
    }
}

impl PartialEq for Image {
    fn eq(&self, other: &Image) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || (self.0.media_type == other.0.media_type && self.0.base64 == other.0.base64)
    }
}

/// Never the bytes: a debug line or a log would carry megabytes.
impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Image({}, {} base64 characters)", self.0.media_type, self.0.base64.len())
    }
}

/// Anthropic's image source, `{"type": "base64", "media_type": …, "data": …}`: how the conversation
/// keeps it (the checkpoints' store, a session saved whole) and how the Messages API takes it.
impl Serialize for Image {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("type", "base64")?;
        m.serialize_entry("media_type", &self.0.media_type)?;
        m.serialize_entry("data", &self.0.base64)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for Image {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Image, D::Error> {
        #[derive(Deserialize)]
        struct Source {
            #[serde(rename = "type")]
            kind: String,
            media_type: String,
            data: String,
        }
        let s = Source::deserialize(d)?;
        if s.kind != "base64" {
            return Err(D::Error::custom(format!("an image source of type {:?}, not base64", s.kind)));
        }
        Ok(Image::new(s.media_type, s.data))
    }
}

/// `data:<media type>;base64,<data>`.
pub struct DataUrl<'a>(&'a Image);

impl fmt::Display for DataUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "data:{};base64,", self.0.media_type())?;
        f.write_str(self.0.base64())
    }
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_shape_and_the_data_url() {
        let img = Image::new("image/png", "iVBORw0KGgo=");
        let v = serde_json::to_value(&img).unwrap();
        assert_eq!(v, serde_json::json!({"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}));
        assert_eq!(serde_json::from_value::<Image>(v).unwrap(), img);
        assert_eq!(img.data_url().to_string(), "data:image/png;base64,iVBORw0KGgo=");
        assert_eq!(format!("{img:?}"), "Image(image/png, 12 base64 characters)");
        let same = Image::new("image/png", "iVBORw0KGgo=");
        assert_eq!((img.id(), img.id().len()), (same.id(), 16), "the same content has the same id");
        assert_ne!(img.id(), Image::new("image/gif", "iVBORw0KGgo=").id());
        let url = serde_json::json!({"type": "url", "media_type": "image/png", "data": "x"});
        assert!(serde_json::from_value::<Image>(url).is_err(), "only base64 sources are read");
    }
}
