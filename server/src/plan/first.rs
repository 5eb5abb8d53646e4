//! Plan first: the mode a run works in, and the texts the model reads when it plans, when the user
//! comments on its plan and when the user approves it.

use serde::{Deserialize, Serialize};

use super::Plan;

/// How a run may act. In `Plan` the tools offered change nothing (`tools::catalog` decides which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Default,
    Plan,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "default" => Some(Mode::Default),
            "plan" => Some(Mode::Plan),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Plan => "plan",
        }
    }
}

/// Added to the system prompt of a run in plan mode.
pub const PLANNING_PROMPT: &str =
    "You are planning, not acting: the user reviews and approves your plan before anything changes. \
Only read-only tools are available now; nothing you do may change a file or run a command that writes. \
Read what you need, write the plan with the planning tool (every step pending), then end your turn.";

/// One comment on the plan: about one item, or about the whole plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanComment {
    #[serde(default)]
    pub id: Option<String>,
    pub text: String,
}

/// The comments as one text block (one planning round): each under the item it is about.
pub fn comments_block(plan: &Plan, comments: &[PlanComment]) -> Result<String, String> {
    let comments: Vec<&PlanComment> = comments.iter().filter(|c| !c.text.trim().is_empty()).collect();
    if comments.is_empty() {
        return Err("no comment to send: each comment needs a non-empty \"text\"".into());
    }
    let mut out = String::from(
        "<plan-comments>The user commented on your plan. Revise it with the planning tool, then end your turn; \
you are still planning.\n",
    );
    for c in comments {
        match c.id.as_deref().map(str::trim).filter(|id| !id.is_empty()) {
            Some(id) => {
                let item =
                    plan.items.iter().find(|i| i.id == id).ok_or_else(|| format!("the plan has no item #{id}"))?;
                out.push_str(&format!("On #{id} ({}): {}\n", item.text, c.text.trim()));
            }
            None => out.push_str(&format!("On the plan: {}\n", c.text.trim())),
        }
    }
    out.push_str("</plan-comments>");
    Ok(out)
}

/// What the approved run is told, once: the plan as approved (its first step now in progress).
pub fn approval_block(plan: &Plan) -> String {
    format!(
        "<plan-approved>The user approved the plan. Carry it out now, step by step, keeping the plan up to date:\n{}</plan-approved>",
        plan.render()
    )
}

/// With a fresh context the model starts from the task and the approved plan, and nothing else.
pub fn fresh_start(task: &str, plan: &Plan) -> String {
    format!("{task}\n\n{}", approval_block(plan))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan() -> Plan {
        let mut p = Plan::default();
        p.update(
            &json!([{"id": "1", "text": "Read", "status": "pending"}, {"id": "2", "text": "Fix", "status": "pending"}]),
        )
        .unwrap();
        p
    }

    #[test]
    fn comments_are_one_block_anchored_to_their_items() {
        let block = comments_block(
            &plan(),
            &[
                PlanComment { id: Some("2".into()), text: "use a test first".into() },
                PlanComment { id: None, text: " shorter ".into() },
            ],
        )
        .unwrap();
        assert!(block.starts_with("<plan-comments>") && block.ends_with("</plan-comments>"), "{block}");
        assert!(block.contains("On #2 (Fix): use a test first\nOn the plan: shorter\n"), "{block}");
        let unknown = comments_block(&plan(), &[PlanComment { id: Some("9".into()), text: "x".into() }]);
        assert_eq!(unknown.unwrap_err(), "the plan has no item #9");
        assert!(comments_block(&plan(), &[PlanComment { id: None, text: "  ".into() }]).is_err());
    }

    #[test]
    fn modes_parse_and_name_themselves() {
        assert_eq!(Mode::parse(" Plan "), Some(Mode::Plan));
        assert_eq!(Mode::parse("default").map(Mode::as_str), Some("default"));
        assert_eq!(Mode::parse("act"), None);
    }
}
