//! How a saved session keeps its images: each once, by content, as a file in a folder beside the
//! session's file (`<session>.images/<sha256>.png`), which the file names in place of the base64
//! (`{"type": "file", "media_type": "image/png", "sha256": "…"}`): the session file is written after
//! every round, and an image in it would be written again each time. The checkpoints' store keeps each
//! message once already (`checkpoint/conversation.rs`), images inline.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::llm::{Block, Image, Message};

/// The folder of a session file's images.
pub fn dir_for(session_file: &Path) -> PathBuf {
    session_file.with_extension("images")
}

/// An image still to be written beside the session (its file's name, the image).
pub type Pending = (String, Image);

/// A message as the session file holds it: as `Message` serialises, its images by reference.
pub struct SavedMessage<'a> {
    message: &'a Message,
    /// The file name of each image, in the order the blocks hold them.
    names: Vec<String>,
}

impl<'a> SavedMessage<'a> {
    /// The message, and its images (to be written before the file that names them).
    pub fn new(message: &'a Message) -> (SavedMessage<'a>, Vec<Pending>) {
        let mut pending = Vec::new();
        for b in message.content.iter() {
            let images = match b {
                Block::Image { source } => std::slice::from_ref(source),
                Block::ToolResult { images, .. } => images.as_slice(),
                _ => &[],
            };
            for image in images {
                pending.push((file_name(image), image.clone()));
            }
        }
        let names = pending.iter().map(|(n, _)| n.clone()).collect();
        (SavedMessage { message, names }, pending)
    }
}

/// `<sha256 of the bytes>.<extension>`.
fn file_name(image: &Image) -> String {
    let bytes = base64::engine::general_purpose::STANDARD.decode(image.base64()).unwrap_or_default();
    format!("{}.{}", sha256_hex(&bytes), extension(image.media_type()))
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn extension(media_type: &str) -> &'static str {
    match media_type {
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "png",
    }
}

/// `{"type": "file", "media_type": …, "sha256": …}`.
struct Ref<'a> {
    media_type: &'a str,
    name: &'a str,
}

impl Serialize for Ref<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let sha = self.name.split('.').next().unwrap_or_default();
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("type", "file")?;
        m.serialize_entry("media_type", self.media_type)?;
        m.serialize_entry("sha256", sha)?;
        m.end()
    }
}

/// The blocks that hold images, as the file holds them (the other blocks are written as `Block` is).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum SavedBlock<'a> {
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        images: Vec<Ref<'a>>,
    },
    Image {
        source: Ref<'a>,
    },
}

impl Serialize for SavedMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.names.is_empty() {
            return self.message.serialize(s);
        }
        struct Blocks<'a>(&'a [Block], &'a [String]);
        impl Serialize for Blocks<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut next = 0;
                let mut refer = |image| {
                    let name = self.1.get(next).map(String::as_str).unwrap_or_default();
                    next += 1;
                    Ref { media_type: Image::media_type(image), name }
                };
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for b in self.0 {
                    match b {
                        Block::Image { source } => {
                            seq.serialize_element(&SavedBlock::Image { source: refer(source) })?
                        }
                        Block::ToolResult { tool_use_id, content, is_error, images } if !images.is_empty() => {
                            let images = images.iter().map(&mut refer).collect();
                            seq.serialize_element(&SavedBlock::ToolResult {
                                tool_use_id,
                                content,
                                is_error: *is_error,
                                images,
                            })?
                        }
                        other => seq.serialize_element(other)?,
                    }
                }
                seq.end()
            }
        }
        let mut m = s.serialize_struct("Message", 2)?;
        m.serialize_field("role", &self.message.role)?;
        m.serialize_field("content", &Blocks(&self.message.content, &self.names))?;
        m.end()
    }
}

/// Writes the images not yet beside the session (a name already there holds the same bytes).
pub fn write(dir: &Path, pending: &[Pending]) -> std::io::Result<()> {
    for (name, image) in pending {
        let file = dir.join(name);
        if file.exists() {
            continue;
        }
        std::fs::create_dir_all(dir)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(image.base64())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        // Written whole under a name of its own, then renamed: a crash leaves no half image under the name.
        let tmp = dir.join(format!("{name}.tmp-{}", std::process::id()));
        std::fs::write(&tmp, &bytes)?;
        std::fs::rename(&tmp, &file)?;
    }
    Ok(())
}

/// A session file's text with its images put back (their base64 read from `dir`), ready to be read as
/// a session; an image whose file is gone or changed becomes a note saying so. `None`: nothing to do.
/// Text, not a value: the session is read from text as ever (reading it from a `Value` too would build a
/// second reader of every type of a session into the binary).
pub fn resolve(text: &str, dir: &Path) -> Option<Result<String, String>> {
    // Cheap first: a session without images is read as it is.
    if !text.contains("\"sha256\"") {
        return None;
    }
    let mut v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Some(Err(e.to_string())),
    };
    let Some(messages) = v.pointer_mut("/session/messages").and_then(Value::as_array_mut) else {
        return Some(Ok(text.to_string()));
    };
    for block in messages.iter_mut().filter_map(|m| m.get_mut("content")).filter_map(Value::as_array_mut).flatten() {
        match block.get("type").and_then(Value::as_str) {
            Some("image") => {
                if let Err(note) = load(block.get_mut("source"), dir) {
                    *block = serde_json::json!({"type": "text", "text": note});
                }
            }
            Some("tool_result") => {
                let Some(images) = block.get_mut("images").and_then(Value::as_array_mut) else { continue };
                let mut notes = Vec::new();
                images.retain_mut(|i| load(Some(i), dir).map_err(|note| notes.push(note)).is_ok());
                if let (false, Some(Value::String(content))) = (notes.is_empty(), block.get_mut("content")) {
                    for note in notes {
                        content.push_str(if content.is_empty() { "" } else { "\n" });
                        content.push_str(&note);
                    }
                }
            }
            _ => {}
        }
    }
    Some(serde_json::to_string(&v).map_err(|e| e.to_string()))
}

/// A reference put back as the image's source; `Err` is the note that takes its place.
fn load(source: Option<&mut Value>, dir: &Path) -> Result<(), String> {
    let Some(source) = source else { return Ok(()) };
    if source.get("type").and_then(Value::as_str) != Some("file") {
        return Ok(());
    }
    let kind = source.get("media_type").and_then(Value::as_str).unwrap_or_default().to_string();
    let sha = source.get("sha256").and_then(Value::as_str).unwrap_or_default();
    let missing = || format!("[image missing: its saved copy ({kind}) is gone]");
    // The name comes from a file on disk: a hash, never a path.
    if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(missing());
    }
    let bytes = std::fs::read(dir.join(format!("{sha}.{}", extension(&kind)))).map_err(|_| missing())?;
    if !sha256_hex(&bytes).eq_ignore_ascii_case(sha) {
        return Err(missing());
    }
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    *source = serde_json::json!({"type": "base64", "media_type": kind, "data": data});
    Ok(())
}
