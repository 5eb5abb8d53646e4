//! Which language servers stepwise would start, and where each comes from: the well-known ones found on
//! `PATH`, and those of the user's `$XDG_CONFIG_HOME/stepwise/language-servers.json` (a name there
//! replaces a well-known one). Never a file of the workspace: a cloned repository cannot name a command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

/// One server: its name, command, the file extensions it serves, and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub name: String,
    pub command: Vec<String>,
    pub extensions: Vec<String>,
    pub origin: Origin,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Well known, its program found on `PATH` at this path.
    Path(PathBuf),
    /// The user's file; the program as found on `PATH` (`None`: not found).
    UserFile { file: PathBuf, program: Option<PathBuf> },
}

impl Origin {
    /// Where the server comes from, for `stepwise doctor`.
    pub fn describe(&self) -> String {
        match self {
            Origin::Path(p) => format!("well known, on PATH at {}", p.display()),
            Origin::UserFile { file, program: Some(p) } => format!("{} ({})", file.display(), p.display()),
            Origin::UserFile { file, program: None } => format!("{} (program not found on PATH)", file.display()),
        }
    }
}

/// The well-known servers, in the order they are preferred for a language.
const WELL_KNOWN: &[WellKnown] = &[
    ("pylsp", &["pylsp"], &["py", "pyi"]),
    ("basedpyright", &["basedpyright-langserver", "--stdio"], &["py", "pyi"]),
    ("pyright", &["pyright-langserver", "--stdio"], &["py", "pyi"]),
    ("rust-analyzer", &["rust-analyzer"], &["rs"]),
    (
        "typescript-language-server",
        &["typescript-language-server", "--stdio"],
        &["ts", "tsx", "js", "jsx", "mjs", "cjs"],
    ),
    ("gopls", &["gopls"], &["go"]),
    ("clangd", &["clangd"], &["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx"]),
];

#[derive(Deserialize)]
struct UserFile {
    servers: BTreeMap<String, UserServer>,
}

#[derive(Deserialize)]
struct UserServer {
    command: Vec<String>,
    extensions: Vec<String>,
}

/// The user's file (`$XDG_CONFIG_HOME`, else `~/.config`).
pub fn user_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("stepwise").join("language-servers.json"))
}

/// A program as `PATH` finds it.
pub fn on_path(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The user's servers (their file's), the problems with that file, and the names it gives: a name there
/// replaces the well-known server of that name, even where its entry is wrong.
pub struct UserServers {
    pub specs: Vec<Spec>,
    pub problems: Vec<String>,
    named: std::collections::HashSet<String>,
}

impl UserServers {
    pub fn read() -> UserServers {
        let mut user = UserServers { specs: Vec::new(), problems: Vec::new(), named: Default::default() };
        let Some(file) = user_file() else { return user };
        match std::fs::read_to_string(&file) {
            Ok(text) => match serde_json::from_str::<UserFile>(&text) {
                Ok(u) => {
                    for (name, s) in u.servers {
                        user.named.insert(name.clone());
                        if s.command.is_empty() || s.extensions.is_empty() {
                            let problem =
                                format!("{}: {name}: command and extensions must not be empty", file.display());
                            user.problems.push(problem);
                            continue;
                        }
                        let program = on_path(&s.command[0]);
                        let extensions = s.extensions.iter().map(|e| e.trim_start_matches('.').to_string()).collect();
                        let origin = Origin::UserFile { file: file.clone(), program };
                        user.specs.push(Spec { name, command: s.command, extensions, origin });
                    }
                }
                Err(e) => user.problems.push(format!("{}: {e}", file.display())),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => user.problems.push(format!("{}: {e}", file.display())),
        }
        user
    }

    /// The well-known servers the user's file does not replace.
    fn well_known(&self) -> impl Iterator<Item = &'static WellKnown> + '_ {
        WELL_KNOWN.iter().filter(|(name, _, _)| !self.named.contains(*name))
    }

    /// Whether a server could serve `path` if its program were on `PATH` (the user's are looked up
    /// already): what tells, without a look-up, that no server would serve a workspace.
    pub fn may_serve(&self, path: &Path) -> bool {
        let ext = extension(path);
        self.specs.iter().any(|s| s.startable() && s.serves_extension(ext)) || self.well_known().any(|w| serves(w, ext))
    }

    /// The user's servers, with the well-known ones to look up on `PATH` when a file they serve is met,
    /// and the problems with the user's file.
    pub fn split(self) -> (Specs, Vec<String>) {
        let rest = self.well_known().collect();
        (Specs { found: self.specs.into_iter().map(Arc::new).collect(), rest }, self.problems)
    }

    /// Every server stepwise would use (the user's, then the well-known ones found on `PATH`: about 80
    /// `statx`), and the problems with the user's file.
    pub fn with_well_known(self) -> (Vec<Arc<Spec>>, Vec<String>) {
        let (specs, problems) = self.split();
        (specs.all(), problems)
    }
}

type WellKnown = (&'static str, &'static [&'static str], &'static [&'static str]);

/// The servers known so far, and the well-known ones not looked up on `PATH` yet: each is looked up when
/// a file it would serve is first met, so a workspace of one language searches `PATH` for its servers
/// only (the other six cost about 70 `statx` before the first model request, issue 39).
#[derive(Default)]
pub struct Specs {
    /// Shared with the servers started from them.
    pub found: Vec<Arc<Spec>>,
    rest: Vec<&'static WellKnown>,
}

impl From<Vec<Spec>> for Specs {
    fn from(found: Vec<Spec>) -> Specs {
        Specs { found: found.into_iter().map(Arc::new).collect(), rest: Vec::new() }
    }
}

impl Specs {
    /// Looks up the well-known servers for `path`'s extension not looked up yet (those found join
    /// `found`, in the order preferred).
    pub fn look_up_for(&mut self, path: &Path) {
        // Every file of the look's walk asks: most ask about an extension already looked up, or none's.
        let ext = extension(path);
        if !self.rest.iter().any(|w| serves(w, ext)) {
            return;
        }
        let (now, later): (Vec<_>, Vec<_>) = self.rest.iter().partition(|w| serves(w, ext));
        self.rest = later;
        self.found.extend(now.into_iter().filter_map(found_on_path).map(Arc::new));
    }

    /// The server for a file (the user's before the well-known ones), looked up on `PATH` if need be.
    pub fn for_file(&mut self, path: &Path) -> Option<Arc<Spec>> {
        self.look_up_for(path);
        self.found.iter().find(|s| s.startable() && s.serves(path)).cloned()
    }

    /// Whether every well-known server was looked up.
    pub fn all_looked_up(&self) -> bool {
        self.rest.is_empty()
    }

    /// Every server, the well-known ones left looked up now.
    pub fn all(mut self) -> Vec<Arc<Spec>> {
        let rest = std::mem::take(&mut self.rest);
        self.found.extend(rest.into_iter().filter_map(found_on_path).map(Arc::new));
        self.found
    }
}

/// A file's extension as the servers' lists name them (`""`: none, or a hidden name's leading dot), taken
/// once per file. Read from the path's bytes after its last `/`: `Path::extension` parses the path into
/// components from the end, most of what the look's walk spent per file (issue 39).
fn extension(path: &Path) -> &str {
    let bytes = path.as_os_str().as_encoded_bytes();
    let name = bytes.rsplit(|b| *b == b'/').next().unwrap_or(bytes);
    match name.iter().rposition(|b| *b == b'.') {
        Some(dot) if dot > 0 => std::str::from_utf8(&name[dot + 1..]).unwrap_or(""),
        _ => "",
    }
}

/// Whether a well-known server serves files of extension `ext`.
fn serves((_, _, exts): &WellKnown, ext: &str) -> bool {
    exts.iter().any(|e| e.eq_ignore_ascii_case(ext))
}

/// A well-known server's spec if its program is on `PATH`.
fn found_on_path(&(name, command, exts): &WellKnown) -> Option<Spec> {
    let found = on_path(command[0])?;
    Some(Spec {
        name: name.to_string(),
        command: command.iter().map(|s| s.to_string()).collect(),
        extensions: exts.iter().map(|s| s.to_string()).collect(),
        origin: Origin::Path(found),
    })
}

/// Every server stepwise would use, and the problems with the user's file (one line each). Servers
/// whose program is not on `PATH` are left out (the user's are listed, marked).
pub fn discover() -> (Vec<Arc<Spec>>, Vec<String>) {
    UserServers::read().with_well_known()
}

impl Spec {
    pub fn startable(&self) -> bool {
        !matches!(self.origin, Origin::UserFile { program: None, .. })
    }

    pub fn serves(&self, path: &Path) -> bool {
        self.serves_extension(extension(path))
    }

    fn serves_extension(&self, ext: &str) -> bool {
        self.extensions.iter().any(|e| e.eq_ignore_ascii_case(ext))
    }

    /// LSP's language id for a file it serves.
    pub fn language_id(&self, path: &Path) -> &'static str {
        match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
            "py" | "pyi" => "python",
            "rs" => "rust",
            "ts" => "typescript",
            "tsx" => "typescriptreact",
            "js" | "mjs" | "cjs" => "javascript",
            "jsx" => "javascriptreact",
            "go" => "go",
            "c" | "h" => "c",
            "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
            _ => "plaintext",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extension_is_what_path_extension_gives() {
        for p in [
            "src/main.rs",
            "a.tar.gz",
            "dir.d/Makefile",
            ".bashrc",
            "x/.x.py",
            "a.",
            "..",
            ".",
            "/",
            "README",
            "a/b.PY",
        ] {
            let path = Path::new(p);
            assert_eq!(extension(path), path.extension().and_then(|e| e.to_str()).unwrap_or(""), "{p}");
        }
    }
}
