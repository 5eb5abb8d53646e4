//! The plan: a validated list of steps kept outside the conversation (the seed's TodoManager).
//!
//! Two planning styles share one `Plan`: the `todo` tool replaces the whole list (s03), while
//! `create_todos` / `update_todo` append steps and move one step forward at a time.

mod board;
pub mod first;
mod text;

pub use board::{By, Change, PlanBoard, PlanState};
pub use first::{Mode, PlanComment};
pub use text::{parse_render, EditItem};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const MAX_ITEMS: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "PlanStatus")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
            Status::Failed => "failed",
        }
    }

    pub fn marker(self) -> &'static str {
        match self {
            Status::Pending => "[ ]",
            Status::InProgress => "[>]",
            Status::Completed => "[x]",
            Status::Failed => "[!]",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanItem {
    pub id: String,
    pub text: String,
    pub status: Status,
    #[serde(rename = "activeForm", skip_serializing_if = "Option::is_none", default)]
    pub active_form: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanningStyle {
    /// One `todo` tool that rewrites the whole list (the seed's s03).
    #[default]
    Todo,
    /// `create_todos` + `update_todo` with forward-only transitions.
    Tasks,
}

impl PlanningStyle {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "todo" => Some(Self::Todo),
            "tasks" => Some(Self::Tasks),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub items: Vec<PlanItem>,
    /// Next id for `create_todos`; ids stay unique even after items are replaced.
    #[serde(default)]
    next_id: u32,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn completed(&self) -> usize {
        self.items.iter().filter(|i| i.status == Status::Completed).count()
    }

    /// True only for a non-empty plan with every step completed (an empty plan is no finished plan).
    pub fn all_completed(&self) -> bool {
        !self.items.is_empty() && self.items.iter().all(|i| i.status == Status::Completed)
    }

    pub fn in_progress(&self) -> Option<&PlanItem> {
        self.items.iter().find(|i| i.status == Status::InProgress)
    }

    /// The plan's rules, for a plan that did not come through `update` (a saved session).
    pub fn check(&self) -> Result<(), String> {
        if self.items.len() > MAX_ITEMS {
            return Err(format!("Max {MAX_ITEMS} todos allowed"));
        }
        if self.items.iter().filter(|i| i.status == Status::InProgress).count() > 1 {
            return Err("Only one task can be in_progress at a time".into());
        }
        let mut ids = std::collections::HashSet::new();
        for item in &self.items {
            if item.text.trim().is_empty() {
                return Err(format!("Item {}: text required", item.id));
            }
            if !ids.insert(item.id.as_str()) {
                return Err(format!("Item {}: duplicate id", item.id));
            }
        }
        Ok(())
    }

    pub fn clear(&mut self) {
        self.items.clear();
        self.next_id = 0;
    }

    /// The `todo` tool: validate the whole list, then replace the plan. On error the plan is untouched.
    pub fn update(&mut self, items: &Value) -> Result<String, String> {
        let parsed;
        // Models sometimes send the array as a JSON string.
        let items = match items {
            Value::String(s) => {
                parsed = serde_json::from_str::<Value>(s)
                    .map_err(|e| format!("items must be an array of todo objects ({e})"))?;
                &parsed
            }
            other => other,
        };
        let list = items.as_array().ok_or_else(|| "items must be an array of todo objects".to_string())?;
        if list.len() > MAX_ITEMS {
            return Err(format!("Max {MAX_ITEMS} todos allowed"));
        }
        let mut validated = Vec::with_capacity(list.len());
        let mut in_progress = 0;
        for (i, item) in list.iter().enumerate() {
            let id = match item.get("id") {
                None | Some(Value::Null) => (i + 1).to_string(),
                Some(v) => value_text(v),
            };
            let obj =
                item.as_object().ok_or_else(|| format!("Item {id}: must be an object with id, text and status"))?;
            let text = obj.get("text").map(value_text).unwrap_or_default().trim().to_string();
            if text.is_empty() {
                return Err(format!("Item {id}: text required"));
            }
            let status_raw = match obj.get("status") {
                None | Some(Value::Null) => "pending".to_string(),
                Some(v) => value_text(v).to_lowercase(),
            };
            let status = match status_raw.as_str() {
                "pending" => Status::Pending,
                "in_progress" => Status::InProgress,
                "completed" => Status::Completed,
                _ => return Err(format!("Item {id}: invalid status '{status_raw}'")),
            };
            if status == Status::InProgress {
                in_progress += 1;
            }
            let active_form = obj
                .get("activeForm")
                .or_else(|| obj.get("active_form"))
                .map(value_text)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty());
            validated.push(PlanItem { id, text, status, active_form });
        }
        if in_progress > 1 {
            return Err("Only one task can be in_progress at a time".into());
        }
        self.items = validated;
        Ok(self.render())
    }

    /// `create_todos {items: [string]}`: append pending steps with fresh sequential ids.
    pub fn create(&mut self, items: &Value) -> Result<String, String> {
        let parsed;
        let items = match items {
            Value::String(s) => {
                parsed = serde_json::from_str::<Value>(s).unwrap_or(Value::String(s.clone()));
                &parsed
            }
            other => other,
        };
        let list =
            items.as_array().ok_or_else(|| "items must be a non-empty array of step descriptions".to_string())?;
        let texts: Vec<String> = list.iter().map(|v| value_text(v).trim().to_string()).collect();
        if texts.is_empty() {
            return Err("items must be a non-empty array of step descriptions".into());
        }
        if let Some(pos) = texts.iter().position(|t| t.is_empty()) {
            return Err(format!("Item {}: text required", pos + 1));
        }
        if self.items.len() + texts.len() > MAX_ITEMS {
            return Err(format!("Max {MAX_ITEMS} todos allowed"));
        }
        self.next_id = self.next_id.max(self.max_numeric_id());
        for text in texts {
            self.next_id += 1;
            self.items.push(PlanItem {
                id: self.next_id.to_string(),
                text,
                status: Status::Pending,
                active_form: None,
            });
        }
        Ok(self.render())
    }

    /// `update_todo {id, status}`: statuses move forward only (pending → running → completed | failed).
    pub fn set_status(&mut self, id: &str, status: &str) -> Result<String, String> {
        let id = id.trim();
        let wanted = match status.trim().to_lowercase().as_str() {
            "running" | "in_progress" => Status::InProgress,
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            other => return Err(format!("invalid status '{other}' for update_todo: use running, completed or failed")),
        };
        let idx = self.items.iter().position(|i| i.id == id).ok_or_else(|| match self.items.is_empty() {
            true => format!("no step with id '{id}': the plan is empty, create steps first"),
            false => format!(
                "no step with id '{id}' (known ids: {})",
                self.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>().join(", ")
            ),
        })?;
        let current = self.items[idx].status;
        let allowed = matches!(
            (current, wanted),
            (Status::Pending, Status::InProgress)
                | (Status::Pending, Status::Completed)
                | (Status::Pending, Status::Failed)
                | (Status::InProgress, Status::Completed)
                | (Status::InProgress, Status::Failed)
        );
        if !allowed {
            return Err(format!(
                "invalid transition for step {id}: {} -> {} (steps only move forward: pending -> running -> completed or failed)",
                task_status_name(current),
                task_status_name(wanted)
            ));
        }
        if wanted == Status::InProgress {
            if let Some(other) = self.in_progress() {
                return Err(format!("Only one task can be in_progress at a time (step {} is running)", other.id));
            }
        }
        self.items[idx].status = wanted;
        Ok(self.render())
    }

    fn max_numeric_id(&self) -> u32 {
        self.items.iter().filter_map(|i| i.id.parse::<u32>().ok()).max().unwrap_or(0)
    }

    /// The text the model reads back after every change.
    pub fn render(&self) -> String {
        if self.items.is_empty() {
            return "No todos.".into();
        }
        let mut out = String::new();
        for item in &self.items {
            out.push_str(item.status.marker());
            out.push_str(" #");
            out.push_str(&item.id);
            out.push_str(": ");
            out.push_str(&item.text);
            if let (Status::InProgress, Some(active)) = (item.status, &item.active_form) {
                out.push_str(" (");
                out.push_str(active);
                out.push(')');
            }
            out.push('\n');
        }
        out.push_str(&format!("\n({}/{} completed)", self.completed(), self.items.len()));
        out
    }

    /// The in-progress step as a human reads it: its activeForm if given, else its text.
    pub fn current_step_label(&self) -> Option<&str> {
        self.in_progress().map(|i| i.active_form.as_deref().unwrap_or(&i.text))
    }
}

fn task_status_name(s: Status) -> &'static str {
    match s {
        Status::InProgress => "running",
        other => other.as_str(),
    }
}

/// The seed's `str(x)`: strings as they are, anything else as its JSON text.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn render_matches_the_seed() {
        let mut p = Plan::default();
        let out = p
            .update(&json!([
                {"id": "1", "text": "Read", "status": "pending"},
                {"id": "2", "text": "Edit", "status": "in_progress"},
                {"id": "3", "text": "Test", "status": "completed"}
            ]))
            .unwrap();
        assert_eq!(out, "[ ] #1: Read\n[>] #2: Edit\n[x] #3: Test\n\n(1/3 completed)");
        assert_eq!(Plan::default().render(), "No todos.");
    }

    #[test]
    fn validation_errors_leave_plan_untouched() {
        let mut p = Plan::default();
        p.update(&json!([{"text": "keep me"}])).unwrap();
        let before = p.clone();
        assert_eq!(
            p.update(&json!([{"text": "a"}, {"text": " ", "status": "pending"}])).unwrap_err(),
            "Item 2: text required"
        );
        assert_eq!(
            p.update(&json!([{"text": "a"}, {"text": "b", "status": "DONE"}])).unwrap_err(),
            "Item 2: invalid status 'done'"
        );
        assert_eq!(
            p.update(&json!([{"text": "a", "status": "in_progress"}, {"text": "b", "status": "In_Progress"}]))
                .unwrap_err(),
            "Only one task can be in_progress at a time"
        );
        let many: Vec<Value> = (0..21).map(|i| json!({"text": format!("t{i}")})).collect();
        assert_eq!(p.update(&Value::Array(many)).unwrap_err(), "Max 20 todos allowed");
        assert_eq!(p, before);
        assert_eq!(p.items[0].id, "1");
        assert_eq!(p.items[0].status, Status::Pending);
    }

    #[test]
    fn items_as_json_string_and_active_form() {
        let mut p = Plan::default();
        let out = p
            .update(&json!("[{\"id\":\"a\",\"text\":\" Fix \",\"status\":\"in_progress\",\"activeForm\":\"Fixing\"}]"))
            .unwrap();
        assert_eq!(out, "[>] #a: Fix (Fixing)\n\n(0/1 completed)");
        assert_eq!(p.current_step_label(), Some("Fixing"));
        assert_eq!(p.update(&json!([])).unwrap(), "No todos.");
    }

    #[test]
    fn tasks_style_moves_forward_only() {
        let mut p = Plan::default();
        p.create(&json!(["one", "two"])).unwrap();
        assert_eq!(p.items[1].id, "2");
        p.set_status("1", "running").unwrap();
        assert!(p.set_status("2", "running").unwrap_err().contains("Only one task"));
        p.set_status("1", "completed").unwrap();
        let err = p.set_status("1", "running").unwrap_err();
        assert!(err.contains("completed -> running"), "{err}");
        assert!(p.set_status("9", "completed").unwrap_err().contains("no step with id '9'"));
        assert!(p.set_status("2", "pending").unwrap_err().contains("invalid status 'pending'"));
        let out = p.set_status("2", "failed").unwrap();
        assert_eq!(out, "[x] #1: one\n[!] #2: two\n\n(1/2 completed)");
        p.create(&json!(["three"])).unwrap();
        assert_eq!(p.items[2].id, "3");
    }

    #[test]
    fn check_finds_what_update_would_refuse() {
        let item = |id: &str, text: &str, status: Status| PlanItem {
            id: id.into(),
            text: text.into(),
            status,
            active_form: None,
        };
        let mut p = Plan {
            items: vec![item("1", "a", Status::InProgress), item("2", "b", Status::Pending)],
            ..Default::default()
        };
        assert_eq!(p.check(), Ok(()));
        p.items = vec![item("1", "a", Status::Pending), item("1", "b", Status::Pending)];
        assert_eq!(p.check().unwrap_err(), "Item 1: duplicate id");
        p.items = vec![item("1", " ", Status::Pending)];
        assert_eq!(p.check().unwrap_err(), "Item 1: text required");
        p.items = (0..21).map(|i| item(&i.to_string(), "x", Status::Pending)).collect();
        assert_eq!(p.check().unwrap_err(), "Max 20 todos allowed");
    }
}
