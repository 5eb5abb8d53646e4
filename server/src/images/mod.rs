//! Images the model is shown: read by `read_file`, or given with a prompt (an editor's paste, an ACP
//! image block, `stepwise run --image`). Each is recognised by its first bytes (PNG, JPEG, GIF, WebP),
//! checked against the providers' limits (refused, naming the limit: nothing is scaled down, which would
//! need a decoder in the binary), and kept as `llm::Image` (base64, as both wire formats carry it).
//! `saved.rs`: how a saved session keeps them (once each, by content, beside the session's file).
//! How they are sent: `llm` (`anthropic_wire.rs`, `openai_wire.rs`).

pub mod format;
pub mod saved;

use std::io::Read;
use std::path::Path;

use base64::Engine;

pub use format::Format;

use crate::host::ResolvedPath;
use crate::llm::{Block, Image, Message};

/// The largest image file taken: Anthropic refuses an image whose base64 passes 5 MiB (3.75 MiB of
/// bytes). OpenAI takes 20 MB; the smaller limit holds for both, so a session can change providers.
pub const MAX_BYTES: usize = 5 * 1024 * 1024 / 4 * 3;
/// The longest side taken (Anthropic's limit; its API scales anything past about 1568 pixels itself).
pub const MAX_SIDE: u32 = 8000;
/// Images one prompt may carry.
pub const MAX_PER_PROMPT: usize = 20;
/// What an image becomes in the conversation once a model has refused images.
pub const REMOVED: &str = "[image removed: the model does not accept images]";
/// What an image counts for in the loop's token estimates: Anthropic's most for one image after its own
/// scaling (about 1.15 megapixels at 750 pixels a token), where its base64 would count hundreds of thousands.
pub const TOKENS: u64 = 1_600;
/// What to do with an image past the limits.
const SHRINK: &str =
    "stepwise does not scale images down: make it smaller first (for example `magick in.png -resize 50% out.png`)";

/// An image that passed the checks, with what its description says.
#[derive(Debug, Clone)]
pub struct Checked {
    pub image: Image,
    pub format: Format,
    pub width: u32,
    pub height: u32,
    /// The file's size in bytes.
    pub bytes: usize,
}

impl Checked {
    /// What `read_file` answers with the image: `Image a.png (image/png, 640x480, 12 KB) follows.`
    pub fn describe(&self, name: &str) -> String {
        format!(
            "Image {name} ({}, {}x{}, {}) follows.",
            self.format.media_type(),
            self.width,
            self.height,
            size(self.bytes as u64)
        )
    }
}

/// `12 KB`, `1.4 MB`.
pub fn size(bytes: u64) -> String {
    if bytes < 1024 * 1024 {
        format!("{} KB", bytes.div_ceil(1024))
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

fn too_large(name: &str, bytes: u64) -> String {
    format!(
        "{name} is an image of {}; models take images up to 3.75 MB (5 MB once in base64, Anthropic's limit per image); {SHRINK}",
        size(bytes)
    )
}

/// `bytes` as an image the model can be sent: recognised by its magic, within the limits. `name` is
/// what messages call it.
pub fn check(name: &str, bytes: &[u8]) -> Result<Checked, String> {
    let Some(format) = Format::sniff(bytes) else {
        return Err(format!("{name} is not a PNG, JPEG, GIF or WebP image"));
    };
    if bytes.len() > MAX_BYTES {
        return Err(too_large(name, bytes.len() as u64));
    }
    let kind = format.media_type();
    let Some((width, height)) = format.dimensions(bytes) else {
        return Err(format!("{name} starts as an {kind} image, but its header cannot be read (damaged or cut short)"));
    };
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(format!(
            "{name} is {width}x{height} pixels; models take images up to {MAX_SIDE} pixels a side (Anthropic's limit); {SHRINK}"
        ));
    }
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(Checked { image: Image::new(kind, data), format, width, height, bytes: bytes.len() })
}

/// An image given as base64 (an editor's paste, an ACP image block; a `data:` URL is taken too). A
/// media type given with it must be the one its bytes say.
pub fn from_base64(name: &str, media_type: Option<&str>, data: &str) -> Result<Checked, String> {
    let (declared, data) = match data.strip_prefix("data:").and_then(|rest| rest.split_once(";base64,")) {
        Some((kind, data)) => (Some(kind).or(media_type), data),
        None => (media_type, data),
    };
    // Checked before decoding: a hostile client's gigabyte is not decoded to be refused.
    if data.len() > MAX_BYTES / 3 * 4 + 4 {
        return Err(too_large(name, data.len() as u64 / 4 * 3));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("{name} is not valid base64 ({e})"))?;
    let checked = check(name, &bytes)?;
    match declared {
        Some(kind) if !kind.eq_ignore_ascii_case(checked.format.media_type()) => {
            Err(format!("{name} was given as {kind}, but its bytes are an {} image", checked.format.media_type()))
        }
        _ => Ok(checked),
    }
}

/// `read_file` of a file beneath the workspace: `None` when it is not an image (it is read as text; a
/// file that cannot be opened is left to that read, which says why).
pub async fn read_file(path: &ResolvedPath) -> Option<Result<Checked, String>> {
    let p = path.clone();
    let read = move || {
        let file = crate::host::disk::open_regular(&p, "read").ok()?;
        read_image(file, &p.given)
    };
    tokio::task::spawn_blocking(read).await.unwrap_or_else(|e| Some(Err(format!("reading {} failed: {e}", path.given))))
}

/// An image a prompt names by its path beneath the workspace (`stepwise.run`'s `{"path"}`).
pub async fn read_workspace_file(path: &ResolvedPath) -> Result<Checked, String> {
    let p = path.clone();
    let read = move || {
        let file = crate::host::disk::open_regular(&p, "read")?;
        read_image(file, &p.given).unwrap_or_else(|| Err(format!("{} is not a PNG, JPEG, GIF or WebP image", p.given)))
    };
    tokio::task::spawn_blocking(read).await.unwrap_or_else(|e| Err(format!("reading {} failed: {e}", path.given)))
}

/// An image file the user names on the command line (`stepwise run --image`): their own choice, so it
/// may lie anywhere; a regular file only.
pub fn read_user_file(path: &Path) -> Result<Checked, String> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| format!("{name}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("{name}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{name} is not a regular file"));
    }
    read_image(file, &name).unwrap_or_else(|| Err(format!("{name} is not a PNG, JPEG, GIF or WebP image")))
}

/// An image a prompt comes with, as an adapter was given it.
pub enum Given<'a> {
    /// A file of the workspace: relative to it, or absolute inside it (confined as the tools' paths are).
    Path(&'a str),
    /// The bytes in base64 (a `data:` URL is taken too), with the media type they were given as.
    Data { media_type: Option<&'a str>, data: &'a str },
}

/// A prompt's images, checked, in order; `Err` says which cannot be taken and why.
pub async fn for_prompt(root: &Path, given: &[Given<'_>]) -> Result<Vec<Image>, String> {
    if given.len() > MAX_PER_PROMPT {
        return Err(format!("a prompt takes at most {MAX_PER_PROMPT} images, not {}", given.len()));
    }
    let mut out = Vec::with_capacity(given.len());
    for (i, g) in given.iter().enumerate() {
        let checked = match g {
            Given::Path(p) => read_workspace_file(&crate::host::resolve(root, p)?).await?,
            Given::Data { media_type, data } => from_base64(&format!("image {}", i + 1), *media_type, data)?,
        };
        out.push(checked.image);
    }
    Ok(out)
}

/// An image of the conversation by its `Image::id` (what a view shows an entry's image with).
pub fn find(messages: &[Message], id: &str) -> Option<Image> {
    messages.iter().flat_map(|m| m.content.iter()).find_map(|b| {
        let images = match b {
            Block::Image { source } => std::slice::from_ref(source),
            Block::ToolResult { images, .. } => images.as_slice(),
            _ => &[],
        };
        images.iter().find(|i| i.id() == id).cloned()
    })
}

/// The file as an image: `None` when its first bytes are not an image's; bounded by `MAX_BYTES`.
fn read_image(mut file: std::fs::File, name: &str) -> Option<Result<Checked, String>> {
    let mut head = [0u8; 16];
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Some(Err(format!("{name}: {e}"))),
        }
    }
    Format::sniff(&head[..got])?;
    let mut bytes = head[..got].to_vec();
    // One byte past the limit tells a file too large, however large it is.
    if let Err(e) = (&mut file).take(MAX_BYTES as u64 + 1 - got as u64).read_to_end(&mut bytes) {
        return Some(Err(format!("{name}: {e}")));
    }
    if bytes.len() > MAX_BYTES {
        let whole = file.metadata().map(|m| m.len()).unwrap_or(bytes.len() as u64);
        return Some(Err(too_large(name, whole.max(bytes.len() as u64))));
    }
    Some(check(name, &bytes))
}

/// Images in the conversation: the user's and the tools'.
pub fn count(messages: &[Message]) -> usize {
    messages.iter().flat_map(|m| m.content.iter()).map(images_in).sum()
}

fn images_in(b: &Block) -> usize {
    match b {
        Block::Image { .. } => 1,
        Block::ToolResult { images, .. } => images.len(),
        _ => 0,
    }
}

/// After a model refused images: each becomes `REMOVED` (a user's image a text block, a tool's a line of
/// its result), so the conversation stays whole and what is sent next carries none. Returns how many went.
pub fn remove_all(messages: &mut [Message]) -> usize {
    let mut removed = 0;
    for m in messages.iter_mut() {
        // Blocks are shared with copies of the conversation (llm::Content): only those changed are copied.
        if !m.content.iter().any(|b| images_in(b) > 0) {
            continue;
        }
        for b in &mut m.content {
            removed += images_in(b);
            match b {
                Block::Image { .. } => *b = Block::Text { text: REMOVED.into() },
                Block::ToolResult { content, images, .. } if !images.is_empty() => {
                    images.clear();
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(REMOVED);
                }
                _ => {}
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests;
