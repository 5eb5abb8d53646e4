//! Finding the skills: the four folders listed, then each skill's head read and checked. A read is three
//! system calls (open, read, close; no `fstat` first), and where a call costs microseconds (a virtual
//! machine: about 2 µs here) those reads are most of what fifty skills add before the first request. (Two
//! threads were tried for them: a thread's start cost more than the reads it took over, 1.1 ms against 0.5.)

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{head_meta, Problem, Scope, Skill, Skills, FILE, HEAD_BYTES, MAX_PER_FOLDER};

/// What the first read of a skill's head asks for: a frontmatter (a name, a description of at most 1024
/// characters, a few more fields) fits.
const FIRST_READ: usize = 2048;

/// The skills folders for `root`, in order: the workspace's two (relative to it), then the user's two.
pub fn folders(root: &Path) -> Vec<(PathBuf, Option<PathBuf>, Scope)> {
    let mut out = Vec::new();
    for rel in [".agents/skills", ".claude/skills"] {
        out.push((root.join(rel), Some(PathBuf::from(rel)), Scope::Workspace));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let user = home.map(|h| h.join(".agents/skills")).into_iter();
    for dir in user.chain(crate::instructions::config_dir().map(|d| d.join("skills"))) {
        // A workspace that is the home folder: its `.agents/skills` is read once, as the workspace's.
        if !out.iter().any(|(d, _, _)| *d == dir) {
            out.push((dir, None, Scope::User));
        }
    }
    out
}

/// Finds the skills for the workspace `root` now.
pub fn find(root: &Path) -> Skills {
    find_in(root, folders(root))
}

/// One skills folder, listed: a workspace's opened beneath it (`within`), its names sorted.
struct Listed {
    dir: PathBuf,
    rel: Option<PathBuf>,
    scope: Scope,
    within: Option<File>,
    names: Vec<String>,
}

/// What reading one skill's head came to: a skill, why it is skipped, or nothing (not a skill).
type Found = Option<Result<Skill, String>>;

/// Finds the skills in `folders` (`folders`' kind) for the workspace `root`.
pub(super) fn find_in(root: &Path, folders: Vec<(PathBuf, Option<PathBuf>, Scope)>) -> Skills {
    let mut skills = Skills { root: root.to_path_buf(), ..Default::default() };
    // The workspace, opened once: its skills folders are opened beneath it, and each skill beneath its folder.
    let workspace = File::open(root);
    let listed: Vec<Listed> = folders
        .into_iter()
        .filter_map(|(dir, rel, scope)| list(dir, rel, scope, &workspace, &mut skills.problems))
        .collect();
    // Each head is read into one buffer.
    let mut buf = vec![0; HEAD_BYTES as usize];
    for (l, name) in listed.iter().flat_map(|l| l.names.iter().map(move |n| (l, n.as_str()))) {
        let folder = l.dir.join(name);
        match read_one(l, name, &workspace, &mut buf) {
            None => {}
            Some(Ok(meta)) => {
                let rel = l.rel.as_ref().map(|r| r.join(name).join(FILE));
                skills.add(Skill { dir: folder, scope: l.scope, rel, ..meta });
            }
            Some(Err(problem)) => skills.problems.push(Problem { path: folder.join(FILE), problem }),
        }
    }
    skills
}

/// The folder's skill names (hidden ones left out), sorted; `None` when it is not there or cannot be read
/// (said in `problems`).
fn list(
    dir: PathBuf,
    rel: Option<PathBuf>,
    scope: Scope,
    workspace: &std::io::Result<File>,
    problems: &mut Vec<Problem>,
) -> Option<Listed> {
    let within = match &rel {
        None => None,
        Some(rel) => match workspace.as_ref().map_err(clone).and_then(|w| open_in(w, rel, libc::O_DIRECTORY)) {
            Ok(d) => Some(d),
            Err(e) if absent(&e) => return None,
            Err(e) => {
                problems.push(Problem { path: dir, problem: read_error(&e) });
                return None;
            }
        },
    };
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if absent(&e) => return None,
        Err(e) => {
            problems.push(Problem { path: dir, problem: format!("cannot be read: {e}") });
            return None;
        }
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    if names.len() > MAX_PER_FOLDER {
        let problem = format!("holds {} folders; only the first {MAX_PER_FOLDER} were read", names.len());
        problems.push(Problem { path: dir.clone(), problem });
        names.truncate(MAX_PER_FOLDER);
    }
    Some(Listed { dir, rel, scope, within, names })
}

/// One skill's head, read into `buf` and checked.
fn read_one(l: &Listed, name: &str, workspace: &std::io::Result<File>, buf: &mut [u8]) -> Found {
    let file = Path::new(name).join(FILE);
    let opened = match (&l.within, &l.rel, workspace) {
        (Some(d), Some(rel), Ok(w)) => match open_in(d, &file, 0) {
            // A skill linked from elsewhere in the workspace (`.claude/skills/x` -> `../../.agents/...`):
            // beneath the workspace is bound enough.
            Err(e) if crate::host::beneath::is_escape(&e) => open_in(w, &rel.join(&file), 0),
            other => other,
        },
        _ => open_user(&l.dir.join(&file)),
    };
    match opened.and_then(|f| read_head(f, buf)) {
        // Only the frontmatter is checked and read: the body after it is not the catalogue's.
        Ok(n) => Some(match closing(&buf[..n]) {
            Some(end) => head_meta(name, &buf[..end], false),
            None => head_meta(name, &buf[..n], n as u64 >= HEAD_BYTES),
        }),
        // A folder without a SKILL.md, or a file: not a skill.
        Err(e) if absent(&e) => None,
        Err(e) => Some(Err(read_error(&e))),
    }
}

/// Not there (or not a folder where one was named): nothing to find, nothing to say.
fn absent(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory)
}

fn clone(e: &std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), e.to_string())
}

pub(super) fn read_error(e: &std::io::Error) -> String {
    if crate::host::beneath::is_escape(e) {
        "leads out of the workspace (a symlink)".into()
    } else {
        format!("cannot be read: {e}")
    }
}

/// A user's own skill file, opened as `text_file` opens one: no FIFO waited on, no terminal taken.
fn open_user(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)
}

/// A skill's head read into `buf`: its first `FIRST_READ` bytes in one read (`text_file::read_from` without
/// its `fstat` first: each call costs), then on as much at a time while the frontmatter has not closed, up
/// to the whole buffer. Most frontmatters close within the first read, so a skill's body (kilobytes of
/// know-how) is not copied in at all. Opened without blocking, what is not a regular file gives nothing at once (a FIFO) or
/// fails (a folder), and is then refused by name.
fn read_head(mut file: File, buf: &mut [u8]) -> std::io::Result<usize> {
    let first = buf.len().min(FIRST_READ);
    let mut n = crate::text_file::read_some(&mut file, &mut buf[..first])?;
    if n == 0 && !file.metadata()?.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    while n < buf.len() && closing(&buf[..n]).is_none() {
        let end = buf.len().min(n + FIRST_READ);
        match crate::text_file::read_some(&mut file, &mut buf[n..end])? {
            0 => break,
            more => n += more,
        }
    }
    Ok(n)
}

/// Where the frontmatter's closing line ends in `head`: a whole line `---` (its end read too) after the
/// first. Where this finds one, so does the parser (`frontmatter::parse`, which trims more).
fn closing(head: &[u8]) -> Option<usize> {
    let mut start = memchr::memchr(b'\n', head)? + 1;
    while let Some(len) = memchr::memchr(b'\n', &head[start..]) {
        if head[start..start + len].trim_ascii_end() == b"---" {
            return Some(start + len + 1);
        }
        start += len + 1;
    }
    None
}

/// `rel` opened beneath the folder `dir` (a symlink leading out of it is refused), without blocking.
pub(super) fn open_in(dir: &File, rel: &Path, flags: libc::c_int) -> std::io::Result<File> {
    crate::host::beneath::open_in(dir, rel, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | flags, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head_of(text: &str) -> (usize, String) {
        let path = std::env::temp_dir().join(format!("stepwise-skill-head-{}-{}", std::process::id(), text.len()));
        std::fs::write(&path, text).unwrap();
        let mut buf = vec![0; HEAD_BYTES as usize];
        let n = read_head(File::open(&path).unwrap(), &mut buf).unwrap();
        std::fs::remove_file(&path).unwrap();
        (n, String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    #[test]
    fn the_head_is_read_as_far_as_the_frontmatter_goes_and_the_body_is_left() {
        let body = "Know-how.\n".repeat(10_000);
        // Closed within the first read: the body past it is not read.
        let (n, head) = head_of(&format!("---\nname: a\ndescription: d\n---\n{body}"));
        assert_eq!(n, FIRST_READ);
        assert!(head.starts_with("---\nname: a"));
        // A frontmatter longer than the first read is read on until its closing line.
        let front =
            format!("---\nname: b\nmetadata:\n{}description: d\n---\n", "  k: vvvvvvvvvvvvvvvvvvvvv\n".repeat(200));
        let (n, head) = head_of(&format!("{front}{body}"));
        assert!(n >= front.len() && n < HEAD_BYTES as usize, "{n}");
        assert!(head.contains("description: d\n---\n"));
        // A line `----` at the first read's end is not the close; nor is a `---` whose line end is not read.
        assert_eq!(closing(b"---\nname: c\n---"), None);
        assert_eq!(closing(b"---\nname: c\n----\n"), None);
        assert_eq!(closing(b"---\nname: c\n--- \r\nbody"), Some(18));
        assert_eq!(closing(b"---\n---\n"), Some(8));
        assert_eq!(closing(b"---\n"), None);
        // Never closed: read up to the whole buffer (and refused by the caller), short files to their end.
        assert_eq!(head_of(&format!("---\nname: d\n{body}")).0, HEAD_BYTES as usize);
        assert_eq!(head_of("---\nname: e\n").0, 12);
    }
}
