//! What the model reads of skills: the catalogue in the system prompt, a skill loaded (`<skill>`), by
//! `load_skill` or by the user's `/<name> [text]`.

use super::{Skill, Skills};

/// The catalogue's first line: what skills are and when to load one.
pub const HEADING: &str = "Skills: know-how for particular tasks. When a task matches a skill's description, call load_skill with its name before you start, and follow it; its folder's scripts and references are yours to read and run with the other tools.";
/// The whole catalogue (heading, lines, the count of those left out) stays within this many characters.
pub const CATALOGUE_MAX: usize = 8000;

impl Skills {
    /// The catalogue for the system prompt (empty when the model has no skill): the heading, then
    /// `- <name>: <description>` a line in the order found, within `CATALOGUE_MAX` characters; those that
    /// do not fit are counted on a last line.
    pub fn catalogue(&self) -> String {
        // Each line with its length in characters, counted once (the budget is in characters).
        let lines: Vec<(String, usize)> = self
            .for_model()
            .map(|s| {
                let l = line(s);
                let n = l.chars().count();
                (l, n)
            })
            .collect();
        if lines.is_empty() {
            return String::new();
        }
        let mut out = format!("\n\n{HEADING}");
        let mut used = out.chars().count();
        let total: usize = used + lines.iter().map(|(_, n)| n + 1).sum::<usize>();
        // Room kept for the count when not every line fits.
        let reserve = if total <= CATALOGUE_MAX { 0 } else { left_out(lines.len()).chars().count() + 1 };
        out.reserve(total.min(CATALOGUE_MAX) * 2);
        let mut shown = 0;
        for (l, n) in &lines {
            if used + n + 1 + reserve > CATALOGUE_MAX {
                break;
            }
            out.push('\n');
            out.push_str(l);
            used += n + 1;
            shown += 1;
        }
        if shown < lines.len() {
            out.push('\n');
            out.push_str(&left_out(lines.len() - shown));
        }
        out
    }

    /// `load_skill`'s answer: the skill as a `<skill>` block, or why not (an unknown name lists the known).
    pub fn load_for_model(&self, name: &str) -> Result<String, String> {
        match self.get(name) {
            Some(s) if !s.user_only => self.block(s),
            Some(_) => Err(format!(
                "the skill {name} is one only the user calls (disable-model-invocation); the user can type /{name}"
            )),
            None => {
                let known: Vec<&str> = self.for_model().map(|s| s.name.as_str()).collect();
                let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                Err(format!("unknown skill '{name}'. Known skills: {known}"))
            }
        }
    }

    /// The skill a prompt `/<name> [text]` calls, loaded as a `<skill>` block, when `<name>` is a skill
    /// (the user calls those only they may call too). `None`: the prompt is text like any other.
    pub fn expand(&self, prompt: &str) -> Option<(&Skill, Result<String, String>)> {
        let rest = prompt.trim_start().strip_prefix('/')?;
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let skill = self.get(&rest[..end])?;
        Some((skill, self.block(skill)))
    }

    /// `<skill name="<name>" path="<its folder>">`, the body, `</skill>`.
    pub fn block(&self, skill: &Skill) -> Result<String, String> {
        let body = self.body(skill)?;
        Ok(format!("<skill name=\"{}\" path=\"{}\">\n{body}\n</skill>", skill.name, attribute(&skill.dir)))
    }
}

/// Whether a user turn's text is a skill the user called (`expand`'s block): views show the prompt that
/// called it, not this.
pub fn is_block(text: &str) -> bool {
    text.starts_with("<skill name=\"") && text.ends_with("</skill>")
}

fn line(s: &Skill) -> String {
    format!("- {}: {}", s.name, s.one_line())
}

fn left_out(n: usize) -> String {
    format!("({n} more {} not listed)", if n == 1 { "skill" } else { "skills" })
}

/// A path as an attribute's value: the characters that would end or confuse it escaped.
fn attribute(path: &std::path::Path) -> String {
    path.display().to_string().replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;")
}
