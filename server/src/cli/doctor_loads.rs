//! What `stepwise doctor` says of what a run may load besides its tools: the skills, and the agents a `task`
//! call may name (with the files that are neither, and why).

use serde_json::{json, Value};

/// A line per skill found, hidden by another of its name, or skipped.
pub(super) fn skills_text(s: &crate::skills::Skills, line: &mut impl FnMut(&str, String)) {
    if s.list.is_empty() {
        line("skills", "none (.agents/skills or .claude/skills in the workspace, ~/.agents/skills)".into());
    }
    for (i, k) in s.list.iter().enumerate() {
        let who = if k.user_only { ", only the user calls it" } else { "" };
        line(if i == 0 { "skills" } else { "" }, format!("{} ({}{who}): {}", k.name, k.scope.name(), k.dir.display()));
    }
    for h in &s.hidden {
        line("skill hidden", format!("{} in {}: the one in {} wins", h.name, h.dir.display(), h.by.display()));
    }
    for p in &s.problems {
        line("skill problem", format!("{}: {} (skipped)", p.path.display(), p.problem));
    }
}

/// The agents of files (the built-in `general` and `explore` go without saying), and the files skipped.
pub(super) fn agents_text(a: &crate::subagents::agents::Agents, line: &mut impl FnMut(&str, String)) {
    let files: Vec<_> = a.list.iter().filter_map(|x| x.file.as_ref().map(|f| (x, f))).collect();
    if files.is_empty() {
        line("agents", "general, explore (none in .agents/agents or .claude/agents)".into());
    }
    for (i, (agent, file)) in files.iter().enumerate() {
        line(if i == 0 { "agents" } else { "" }, format!("{}: {}", agent.name, file.display()));
    }
    for p in &a.problems {
        line("agent problem", format!("{}: {} (skipped)", p.file.display(), p.why));
    }
}

pub(super) fn agents_json(a: &crate::subagents::agents::Agents) -> Value {
    json!({
        "list": a.list.iter().map(|x| json!({"name": x.name, "description": x.description, "path": x.file, "tools": x.tools})).collect::<Vec<_>>(),
        "problems": a.problems.iter().map(|p| json!({"path": p.file, "problem": p.why})).collect::<Vec<_>>(),
    })
}

pub(super) fn skills_json(s: &crate::skills::Skills) -> Value {
    let one = |s: &crate::skills::Skill| json!({"name": s.name, "description": s.description, "path": s.dir, "scope": s.scope.name(), "userOnly": s.user_only});
    Value::Array(s.list.iter().map(one).collect())
}

pub(super) fn hidden_json(s: &crate::skills::Skills) -> Value {
    Value::Array(s.hidden.iter().map(|h| json!({"name": h.name, "path": h.dir, "by": h.by})).collect())
}

pub(super) fn skill_problems_json(s: &crate::skills::Skills) -> Value {
    Value::Array(s.problems.iter().map(|p| json!({"path": p.path, "problem": p.problem})).collect())
}
