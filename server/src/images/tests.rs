use base64::Engine;

use super::format::samples;
use super::*;
use crate::llm::Role;

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("stepwise-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn an_image_is_checked_and_described() {
    let png = samples::png(640, 480);
    let c = check("shot.png", &png).unwrap();
    assert_eq!((c.format, c.width, c.height, c.bytes), (Format::Png, 640, 480, png.len()));
    assert_eq!(c.image.media_type(), "image/png");
    assert_eq!(c.image.base64(), b64(&png));
    assert_eq!(c.describe("shot.png"), "Image shot.png (image/png, 640x480, 1 KB) follows.");
    assert_eq!((size(12 * 1024), size(1_468_006)), ("12 KB".to_string(), "1.4 MB".to_string()));
}

#[test]
fn past_the_limits_is_refused_naming_the_limit() {
    let wide = check("wide.jpg", &samples::jpeg(9000, 100)).unwrap_err();
    assert_eq!(
        wide,
        "wide.jpg is 9000x100 pixels; models take images up to 8000 pixels a side (Anthropic's limit); stepwise does not scale images down: make it smaller first (for example `magick in.png -resize 50% out.png`)"
    );
    let mut big = samples::png(100, 100);
    big.resize(MAX_BYTES + 1, 0);
    let err = check("big.png", &big).unwrap_err();
    assert!(
        err.starts_with("big.png is an image of 3.8 MB; models take images up to 3.75 MB (5 MB once in base64"),
        "{err}"
    );
    assert_eq!(check("notes.txt", b"hello").unwrap_err(), "notes.txt is not a PNG, JPEG, GIF or WebP image");
    let cut = check("cut.png", &samples::png(1, 1)[..20]).unwrap_err();
    assert_eq!(cut, "cut.png starts as an image/png image, but its header cannot be read (damaged or cut short)");
}

#[test]
fn base64_from_an_editor_or_a_client() {
    let png = samples::png(3, 2);
    let c = from_base64("image 1", Some("image/png"), &b64(&png)).unwrap();
    assert_eq!((c.width, c.height), (3, 2));
    // A data URL says its own type; a type that is not the bytes' is refused.
    let url = format!("data:image/png;base64,{}", b64(&png));
    assert_eq!(from_base64("image 1", None, &url).unwrap().image.base64(), b64(&png));
    assert_eq!(
        from_base64("image 2", Some("image/jpeg"), &b64(&png)).unwrap_err(),
        "image 2 was given as image/jpeg, but its bytes are an image/png image"
    );
    assert!(from_base64("image 3", None, "not base64!").unwrap_err().starts_with("image 3 is not valid base64"));
    // Refused before it is decoded.
    let huge = "A".repeat(MAX_BYTES / 3 * 4 + 8);
    assert!(from_base64("image 4", None, &huge).unwrap_err().contains("models take images up to 3.75 MB"));
}

#[test]
fn a_user_file_anywhere_and_not_an_image() {
    let dir = temp_dir("images-user");
    let (shot, text) = (dir.join("shot.gif"), dir.join("notes.png"));
    std::fs::write(&shot, b"GIF89a\x0a\x00\x05\x00\xf0\x00\x00").unwrap();
    std::fs::write(&text, "not really a png").unwrap();
    assert_eq!(read_user_file(&shot).unwrap().format, Format::Gif);
    let name = text.display();
    assert_eq!(read_user_file(&text).unwrap_err(), format!("{name} is not a PNG, JPEG, GIF or WebP image"));
    assert!(read_user_file(&dir).unwrap_err().ends_with("is not a regular file"));
    let _ = std::fs::remove_dir_all(&dir);
}

fn convo() -> Vec<Message> {
    let png = check("a.png", &samples::png(2, 2)).unwrap().image;
    let jpg = check("b.jpg", &samples::jpeg(4, 3)).unwrap().image;
    vec![
        Message {
            role: Role::User,
            content: vec![Block::Text { text: "look".into() }, Block::Image { source: jpg }].into(),
        },
        Message {
            role: Role::User,
            content: vec![
                Block::ToolResult {
                    tool_use_id: "t1".into(),
                    content: "Image a.png".into(),
                    is_error: false,
                    images: vec![png],
                },
                Block::result("t2", "plain", false),
            ]
            .into(),
        },
    ]
}

#[test]
fn a_refusal_removes_every_image_and_keeps_the_rest() {
    let mut m = convo();
    let untouched = Message { role: Role::User, content: vec![Block::Text { text: "no images".into() }].into() };
    m.push(untouched.clone());
    let before = m.clone();
    assert_eq!(count(&m), 2);
    assert_eq!(remove_all(&mut m), 2);
    assert_eq!(count(&m), 0);
    assert_eq!(m[0].content[1], Block::Text { text: REMOVED.into() });
    assert_eq!(m[1].content[0], Block::result("t1", format!("Image a.png\n{REMOVED}"), false));
    assert_eq!(m[1].content[1], before[1].content[1]);
    assert!(m[2].same(&before[2]), "a message without images is not copied");
    assert_eq!(remove_all(&mut m), 0);
}

#[test]
fn an_image_is_found_by_its_id() {
    let m = convo();
    let Block::Image { source } = &m[0].content[1] else { panic!() };
    assert_eq!(find(&m, &source.id()).as_ref(), Some(source));
    assert_eq!(find(&m, "0000000000000000"), None);
}

#[test]
fn a_session_keeps_each_image_once_beside_it_and_gets_it_back() {
    let dir = temp_dir("images-saved");
    let images = saved::dir_for(&dir.join("s.json"));
    let m = convo();
    let mut text = String::from(r#"{"format":1,"session":{"messages":["#);
    let mut pending = Vec::new();
    for (i, msg) in m.iter().chain(m.iter()).enumerate() {
        let (s, p) = saved::SavedMessage::new(msg);
        pending.extend(p);
        text.push_str(if i > 0 { "," } else { "" });
        text.push_str(&serde_json::to_string(&s).unwrap());
    }
    text.push_str("]}}");
    assert!(
        !text.contains(
            m[0].content
                .iter()
                .find_map(|b| match b {
                    Block::Image { source } => Some(source.base64()),
                    _ => None,
                })
                .unwrap()
        ),
        "no base64 in the file: {text}"
    );
    saved::write(&images, &pending).unwrap();
    let mut files: Vec<String> =
        std::fs::read_dir(&images).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files.len(), 2, "each image once, by content: {files:?}");
    assert!(files[0].ends_with(".jpg") && files[1].ends_with(".png"), "{files:?}");
    assert_eq!(std::fs::read(images.join(&files[1])).unwrap(), samples::png(2, 2), "the file is the image itself");
    let back: serde_json::Value = serde_json::from_str(&saved::resolve(&text, &images).unwrap().unwrap()).unwrap();
    let messages: Vec<Message> = serde_json::from_value(back["session"]["messages"].clone()).unwrap();
    assert_eq!(messages, [m.clone(), m.clone()].concat());
    // A file gone (or changed) becomes a note; the rest stays.
    std::fs::write(images.join(&files[1]), b"changed").unwrap();
    std::fs::remove_file(images.join(&files[0])).unwrap();
    let back: serde_json::Value = serde_json::from_str(&saved::resolve(&text, &images).unwrap().unwrap()).unwrap();
    let messages: Vec<Message> = serde_json::from_value(back["session"]["messages"].clone()).unwrap();
    assert_eq!(
        messages[0].content[1],
        Block::Text { text: "[image missing: its saved copy (image/jpeg) is gone]".into() }
    );
    assert_eq!(
        messages[1].content[0],
        Block::result("t1", "Image a.png\n[image missing: its saved copy (image/png) is gone]", false)
    );
    // A name that is not a hash is never a path.
    let evil = r#"{"session":{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","media_type":"image/png","sha256":"../../etc/passwd"}}]}]}}"#;
    let back: serde_json::Value = serde_json::from_str(&saved::resolve(evil, &images).unwrap().unwrap()).unwrap();
    assert_eq!(back["session"]["messages"][0]["content"][0]["type"], "text");
    assert!(saved::resolve(r#"{"session":{"messages":[]}}"#, &images).is_none(), "nothing to do without images");
    let _ = std::fs::remove_dir_all(&dir);
}
