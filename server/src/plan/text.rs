//! The user's edits of the plan: a list of items, or the plan's own render form as text
//! (`[ ] #1: text`, `[>] #2: text`, `[x] #3: text`; a line without `#id:` is a new item).
//! The plan's rules apply to the user exactly as to the model: the same checks, the same texts.

use serde::Deserialize;
use serde_json::{json, Value};

use super::{Plan, Status};

/// One item as an editor sends it; an item without `id` is new.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub struct EditItem {
    #[serde(default)]
    pub id: Option<String>,
    pub text: String,
    #[serde(default = "pending")]
    pub status: String,
    #[serde(rename = "activeForm", default)]
    pub active_form: Option<String>,
}

fn pending() -> String {
    "pending".into()
}

impl Plan {
    /// The plan the user asked for: `items` replace the list, new items get fresh ids. Errors are the
    /// rule's text, as the `todo` tool gives them (`Only one task can be in_progress at a time`, ...).
    pub fn edited(&self, items: &[EditItem]) -> Result<Plan, String> {
        let mut next = items
            .iter()
            .filter_map(|i| i.id.as_deref())
            .chain(self.items.iter().map(|i| i.id.as_str()))
            .filter_map(|id| id.trim().parse::<u32>().ok())
            .max()
            .unwrap_or(0)
            .max(self.next_id);
        let list: Vec<Value> = items
            .iter()
            .map(|i| {
                let id = match i.id.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
                    Some(id) => id.to_string(),
                    None => {
                        next += 1;
                        next.to_string()
                    }
                };
                json!({"id": id, "text": i.text, "status": i.status, "activeForm": i.active_form})
            })
            .collect();
        let mut plan = Plan { items: Vec::new(), next_id: next };
        // Failed steps (the tasks style) may stay failed; `update` knows only the seed's three statuses.
        let failed: Vec<bool> = items.iter().map(|i| i.status.trim().eq_ignore_ascii_case("failed")).collect();
        let list: Vec<Value> = list
            .into_iter()
            .zip(&failed)
            .map(|(mut v, f)| {
                if *f {
                    v["status"] = json!("completed");
                }
                v
            })
            .collect();
        plan.update(&Value::Array(list))?;
        for (item, f) in plan.items.iter_mut().zip(failed) {
            if f {
                item.status = Status::Failed;
            }
        }
        plan.check()?;
        Ok(plan)
    }
}

/// Reads the render form back into items. The `(n/m completed)` line, `No todos.` and blank lines are
/// ignored; an in-progress line keeps the item's activeForm when it still ends with ` (activeForm)`.
pub fn parse_render(text: &str, current: &Plan) -> Result<Vec<EditItem>, String> {
    let mut items = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line == "No todos." || is_count_line(line) {
            continue;
        }
        let line = line.strip_prefix("- ").unwrap_or(line);
        let (status, rest) = match line.get(..3) {
            Some("[ ]") => ("pending", &line[3..]),
            Some("[>]") => ("in_progress", &line[3..]),
            Some("[x]") | Some("[X]") => ("completed", &line[3..]),
            Some("[!]") => ("failed", &line[3..]),
            _ if line.starts_with('[') => {
                return Err(format!("Line {}: unknown marker (use [ ], [>], [x]): {raw}", n + 1));
            }
            _ => ("pending", line),
        };
        let rest = rest.trim();
        let (id, mut text) = match rest.strip_prefix('#').and_then(|r| r.split_once(':')) {
            Some((id, text)) if !id.trim().is_empty() && !id.contains(char::is_whitespace) => {
                (Some(id.trim().to_string()), text.trim().to_string())
            }
            _ => (None, rest.to_string()),
        };
        let mut active_form = None;
        if let Some(known) = id.as_deref().and_then(|id| current.items.iter().find(|i| i.id == id)) {
            if let Some(af) = &known.active_form {
                let suffix = format!(" ({af})");
                if status == "in_progress" && text.ends_with(&suffix) {
                    text.truncate(text.len() - suffix.len());
                }
                active_form = Some(af.clone());
            }
        }
        items.push(EditItem { id, text, status: status.into(), active_form });
    }
    Ok(items)
}

fn is_count_line(line: &str) -> bool {
    line.strip_prefix('(')
        .and_then(|l| l.strip_suffix(" completed)"))
        .and_then(|l| l.split_once('/'))
        .is_some_and(|(a, b)| a.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(items: Value) -> Plan {
        let mut p = Plan::default();
        p.update(&items).unwrap();
        p
    }

    #[test]
    fn render_form_round_trips_and_new_lines_get_fresh_ids() {
        let p = plan(json!([
            {"id": "1", "text": "Read", "status": "completed"},
            {"id": "2", "text": "Fix", "status": "in_progress", "activeForm": "Fixing"},
        ]));
        let items = parse_render(&p.render(), &p).unwrap();
        assert_eq!(p.edited(&items).unwrap().items, p.items);

        let text = "[x] #1: Read\n[ ] #2: Fix (Fixing)\nWrite the docs\n[>] Test it\n\n(1/4 completed)";
        let e = p.edited(&parse_render(text, &p).unwrap()).unwrap();
        let got: Vec<(&str, &str, Status)> = e.items.iter().map(|i| (&*i.id, &*i.text, i.status)).collect();
        assert_eq!(
            got,
            [
                ("1", "Read", Status::Completed),
                ("2", "Fix (Fixing)", Status::Pending),
                ("3", "Write the docs", Status::Pending),
                ("4", "Test it", Status::InProgress)
            ]
        );
    }

    #[test]
    fn the_rules_apply_to_the_user() {
        let p = Plan::default();
        let two = parse_render("[>] a\n[>] b", &p).unwrap();
        assert_eq!(p.edited(&two).unwrap_err(), "Only one task can be in_progress at a time");
        let dup = parse_render("[ ] #1: a\n[ ] #1: b", &p).unwrap();
        assert_eq!(p.edited(&dup).unwrap_err(), "Item 1: duplicate id");
        let many: String = (0..21).map(|i| format!("step {i}\n")).collect();
        assert_eq!(p.edited(&parse_render(&many, &p).unwrap()).unwrap_err(), "Max 20 todos allowed");
        let bad = [EditItem { id: Some("7".into()), text: "x".into(), status: "done".into(), active_form: None }];
        assert_eq!(p.edited(&bad).unwrap_err(), "Item 7: invalid status 'done'");
        let empty = [EditItem { id: None, text: " ".into(), status: "pending".into(), active_form: None }];
        assert_eq!(p.edited(&empty).unwrap_err(), "Item 1: text required");
        assert!(parse_render("[?] x", &p).unwrap_err().contains("Line 1"));
        assert_eq!(p.edited(&parse_render("No todos.\n", &p).unwrap()).unwrap(), Plan::default());
    }
}
