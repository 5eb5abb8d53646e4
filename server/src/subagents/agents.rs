//! The agents a `task` call may name: `general`, `explore`, and those defined in Markdown files (Claude
//! Code's agent format: frontmatter `name`, `description`, `tools`?, `model`?; the body is the child's
//! system prompt). A workspace's file is instructions, as `AGENTS.md` is: it narrows the tools, it never
//! widens what the session may do (the child runs under the parent's approvals and sandbox).

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::skills::frontmatter;

/// An agent file is read up to this size (a system prompt, not a document).
const MAX_FILE: u64 = 64 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub name: String,
    pub description: String,
    /// The tools it may use, as stepwise names them (`None`: the parent's, less `task`).
    pub tools: Option<Vec<String>>,
    /// Read-only: the plan mode's tools (read_file, code intelligence, bash in the read-only sandbox).
    pub read_only: bool,
    /// Its system prompt, after stepwise's own.
    pub prompt: String,
    /// The file it came from (`None`: built in).
    pub file: Option<PathBuf>,
}

/// A file that is no agent, as `stepwise doctor` says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub file: PathBuf,
    pub why: String,
}

#[derive(Debug, Default)]
pub struct Agents {
    pub list: Vec<Agent>,
    pub problems: Vec<Problem>,
}

fn builtin() -> Vec<Agent> {
    let agent = |name: &str, description: &str, read_only| Agent {
        name: name.into(),
        description: description.into(),
        tools: None,
        read_only,
        prompt: String::new(),
        file: None,
    };
    vec![
        agent("general", "A general agent with the session's tools (less task).", false),
        agent(
            "explore",
            "A read-only agent: reads files, asks the language servers, runs commands in the read-only sandbox.",
            true,
        ),
    ]
}

/// The agents folders for `root`: the workspace's two (relative to it), then the user's.
fn folders() -> Vec<(PathBuf, bool)> {
    let mut out = vec![(PathBuf::from(".agents/agents"), true), (PathBuf::from(".claude/agents"), true)];
    out.extend(crate::instructions::config_dir().map(|d| (d.join("agents"), false)));
    out
}

/// The agents for the workspace `root` now: the built-in ones, then the files' (the first of a name wins;
/// a file may not take a built-in name).
pub fn find(root: &Path) -> Agents {
    let mut agents = Agents { list: builtin(), problems: Vec::new() };
    for (dir, in_workspace) in folders() {
        let listed = match in_workspace {
            true => std::fs::read_dir(root.join(&dir)),
            false => std::fs::read_dir(&dir),
        };
        let Ok(listed) = listed else { continue };
        let mut names: Vec<String> = listed
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".md"))
            .collect();
        names.sort();
        for name in names {
            let shown = if in_workspace { root.join(&dir).join(&name) } else { dir.join(&name) };
            let read = match in_workspace {
                // Beneath the workspace, without following a symlink out of it.
                true => crate::host::beneath::open(root, &dir.join(&name), libc::O_RDONLY, 0),
                false => std::fs::File::open(&shown),
            };
            let parsed = read.map_err(|e| e.to_string()).and_then(read_text).and_then(|t| parse(&t));
            match parsed {
                Ok(mut agent) if !agents.list.iter().any(|a| a.name == agent.name) => {
                    agent.file = Some(shown);
                    agents.list.push(agent);
                }
                Ok(agent) => agents.problems.push(Problem {
                    file: shown,
                    why: format!("the agent {} is defined before (built in or in an earlier folder)", agent.name),
                }),
                Err(why) => agents.problems.push(Problem { file: shown, why }),
            }
        }
    }
    agents
}

fn read_text(f: std::fs::File) -> Result<String, String> {
    let mut text = String::new();
    f.take(MAX_FILE + 1).read_to_string(&mut text).map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_FILE {
        return Err(format!("larger than {MAX_FILE} bytes"));
    }
    Ok(text)
}

/// One agent file.
pub fn parse(text: &str) -> Result<Agent, String> {
    let fm = frontmatter::parse(text)?;
    let field = |key: &str| -> Result<Option<String>, String> {
        match fm.fields.get(key) {
            None => Ok(None),
            Some(Some(s)) => Ok(Some(s.text.trim().to_string())),
            Some(None) => Err(format!("`{key}` must be text (a comma-separated list for tools)")),
        }
    };
    let name = field("name")?.filter(|n| !n.is_empty()).ok_or("no `name` in the frontmatter")?;
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(format!("the name `{name}` may hold only letters, digits, `-` and `_`"));
    }
    let description = field("description")?.filter(|d| !d.is_empty()).ok_or("no `description` in the frontmatter")?;
    let tools = field("tools")?.map(|t| tool_names(&t));
    let body = text.get(fm.body_at..).unwrap_or("").trim().to_string();
    Ok(Agent { name, description, tools, read_only: false, prompt: body, file: None })
}

/// A `tools` list as stepwise names its tools: its own names, and Claude Code's (`Read`, `Edit`, `Bash`,
/// `Grep`, ...) as the tools that do their work here. Names neither knows are left out: a narrowing.
fn tool_names(list: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for given in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let mapped: &[&str] = match given {
            "Read" | "NotebookRead" => &["read_file"],
            "Write" => &["write_file"],
            "Edit" | "MultiEdit" | "NotebookEdit" => &["edit_file"],
            "Bash" | "Grep" | "Glob" | "LS" => &["bash"],
            "TodoWrite" | "TodoRead" => &["todo"],
            "BashOutput" | "KillShell" | "KillBash" => &["check_background", "kill_background"],
            other => {
                out.push(other.to_string());
                continue;
            }
        };
        out.extend(mapped.iter().map(|s| s.to_string()));
    }
    out.dedup();
    out
}

impl Agents {
    /// What the system prompt says of the agents defined in files (nothing when there are none: the `task`
    /// tool's description names the built-in ones, and the prompt of a workspace without agents stays as it was).
    pub fn catalogue(&self) -> String {
        let files: Vec<String> =
            self.list.iter().filter(|a| a.file.is_some()).map(|a| format!("- {}: {}", a.name, a.description)).collect();
        match files.is_empty() {
            true => String::new(),
            false => format!("\n\nAgents the task tool may name besides general and explore:\n{}", files.join("\n")),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Agent> {
        self.list.iter().find(|a| a.name == name)
    }

    /// The known names, for the error of an unknown one.
    pub fn names(&self) -> String {
        self.list.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_agent_file_reads_as_it_is() {
        let text = "---\nname: code-reviewer\ndescription: Reviews code for quality\ntools: Read, Grep, Glob, Bash\nmodel: sonnet\n---\nYou are a senior reviewer.\n";
        let a = parse(text).unwrap();
        assert_eq!(a.name, "code-reviewer");
        assert_eq!(a.tools, Some(vec!["read_file".to_string(), "bash".to_string()]));
        assert_eq!(a.prompt, "You are a senior reviewer.");
    }

    #[test]
    fn a_file_without_a_name_or_with_a_list_it_cannot_read_is_refused() {
        assert!(parse("---\ndescription: x\n---\nbody").unwrap_err().contains("name"));
        assert!(parse("no frontmatter").is_err());
        let e = parse("---\nname: a\ndescription: d\ntools:\n  - Read\n---\n").unwrap_err();
        assert!(e.contains("tools"), "{e}");
    }

    #[test]
    fn workspace_files_are_found_and_a_built_in_name_is_not_taken() {
        let dir = std::env::temp_dir().join(format!("stepwise-agents-{}", std::process::id()));
        let agents_dir = dir.join(".claude/agents");
        std::fs::create_dir_all(&agents_dir).unwrap();
        std::fs::write(agents_dir.join("a.md"), "---\nname: tester\ndescription: Runs tests\n---\nRun them.").unwrap();
        std::fs::write(agents_dir.join("b.md"), "---\nname: explore\ndescription: mine\n---\n").unwrap();
        std::fs::write(agents_dir.join("c.md"), "not an agent").unwrap();
        let found = find(&dir);
        assert_eq!(found.get("tester").map(|a| a.prompt.as_str()), Some("Run them."));
        assert!(found.get("explore").is_some_and(|a| a.read_only), "the built-in explore stays");
        assert_eq!(found.problems.len(), 2, "{:?}", found.problems);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
