//! Every tool described once: its name, schema, kind, title, whether it changes anything and whether it
//! asks the user first. The loop, plan mode, the views (ACP's kinds and titles, the terminal) and the
//! sandbox read this instead of matching on names of their own.

use std::borrow::Cow;

use crate::llm::{Schema, ToolSpec};
use crate::mcp::McpTools;
use crate::plan::{Mode, PlanningStyle};
use crate::sandbox::{SandboxMode, SandboxSettings};

/// What a tool does, as views group tools (ACP's `ToolKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Edit,
    Execute,
    /// The planning tools: they change the plan, never the workspace.
    Think,
    Other,
}

/// What runs a call: `tools.rs` dispatches on it, and views that show a call's arguments read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    Shell,
    ReadFile,
    WriteFile,
    EditFile,
    /// The `todo` style's one tool: the whole list, rewritten.
    Todo,
    CreateTodos,
    UpdateTodo,
    /// A tool of an MCP server.
    Mcp,
    /// `background_run`: a shell command that keeps running (`crate::background`).
    BackgroundRun,
    CheckBackground,
    KillBackground,
    /// Code intelligence (`intel/`): offered only where the session has a source.
    Diagnostics,
    CodeNav,
    Rename,
    /// `load_skill` (`skills/`): offered only where the run found a skill the model may load.
    LoadSkill,
    /// `task` (`subagents/`): the agent loop runs it, not `tools::execute`.
    Task,
}

/// When a call asks the user before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asks {
    Never,
    /// Every call, unless the session already allowed it (shell commands, MCP tools).
    Always,
    /// Writes to a protected path (`.git/`, `.env`, ...).
    ProtectedPath,
}

/// One tool as the catalog describes it.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    pub name: &'static str,
    /// The verb a view shows before the call's summary (`Run ls`, `Edit a.rs`).
    pub title: &'static str,
    pub kind: Kind,
    pub handler: Handler,
    /// Changes no file and runs nothing: offered in plan mode.
    pub read_only: bool,
    pub asks: Asks,
    /// The planning style that offers it (`None`: every style).
    style: Option<PlanningStyle>,
    description: &'static str,
    /// Its input schema, as JSON text (sent as it is written).
    schema: &'static str,
}

/// The input of `bash` and `background_run`: one shell command (the seed's `bash` schema).
const COMMAND_SCHEMA: &str =
    r#"{"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}"#;

pub const BASH: Tool = Tool {
    name: "bash",
    title: "Run",
    kind: Kind::Execute,
    handler: Handler::Shell,
    read_only: false,
    asks: Asks::Always,
    style: None,
    description: "Run a shell command.",
    schema: COMMAND_SCHEMA,
};

pub const READ_FILE: Tool = Tool {
    name: "read_file",
    title: "Read",
    kind: Kind::Read,
    handler: Handler::ReadFile,
    read_only: true,
    asks: Asks::Never,
    style: None,
    description: "Read file contents.",
    schema: r#"{"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["path"]}"#,
};

pub const WRITE_FILE: Tool = Tool {
    name: "write_file",
    title: "Write",
    kind: Kind::Edit,
    handler: Handler::WriteFile,
    read_only: false,
    asks: Asks::ProtectedPath,
    style: None,
    description: "Write content to file.",
    schema: r#"{"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}"#,
};

pub const EDIT_FILE: Tool = Tool {
    name: "edit_file",
    title: "Edit",
    kind: Kind::Edit,
    handler: Handler::EditFile,
    read_only: false,
    asks: Asks::ProtectedPath,
    style: None,
    description: "Replace exact text in file.",
    schema: r#"{"type": "object", "properties": {"path": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}}, "required": ["path", "old_text", "new_text"]}"#,
};

pub const TODO: Tool = Tool {
    name: "todo",
    title: "Update plan",
    kind: Kind::Think,
    handler: Handler::Todo,
    read_only: true,
    asks: Asks::Never,
    style: Some(PlanningStyle::Todo),
    description: "Update task list. Track progress on multi-step tasks.",
    schema: concat!(
        r#"{"type": "object", "properties": {"items": {"type": "array", "items": {"#,
        r#""type": "object", "#,
        r#""properties": {"#,
        r#""id": {"type": "string"}, "#,
        r#""text": {"type": "string"}, "#,
        r#""status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}, "#,
        r#""activeForm": {"type": "string", "description": "Present-tense label shown while the item is in progress, e.g. \"Fixing the parser\""}"#,
        r#"}, "#,
        r#""required": ["id", "text", "status"]}}}, "required": ["items"]}"#,
    ),
};

pub const CREATE_TODOS: Tool = Tool {
    name: "create_todos",
    title: "Update plan",
    kind: Kind::Think,
    handler: Handler::CreateTodos,
    read_only: true,
    asks: Asks::Never,
    style: Some(PlanningStyle::Tasks),
    description:
        "Create an execution plan: split the task into steps, in order. Steps are numbered and start as pending.",
    schema: r#"{"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}, "description": "Step descriptions in execution order"}}, "required": ["items"]}"#,
};

pub const UPDATE_TODO: Tool = Tool {
    name: "update_todo",
    title: "Update plan",
    kind: Kind::Think,
    handler: Handler::UpdateTodo,
    read_only: true,
    asks: Asks::Never,
    style: Some(PlanningStyle::Tasks),
    description: "Update a step's status: running when you start it, completed when done, failed when it failed.",
    schema: r#"{"type": "object", "properties": {"id": {"type": "string", "description": "Step id given at creation"}, "status": {"type": "string", "enum": ["running", "completed", "failed"]}}, "required": ["id", "status"]}"#,
};

pub const BACKGROUND_RUN: Tool = Tool {
    name: "background_run",
    title: "Run in background",
    kind: Kind::Execute,
    handler: Handler::BackgroundRun,
    read_only: false,
    asks: Asks::Always,
    style: None,
    description: "Run a shell command in the background (a dev server, a watcher, a long build); returns its task id at once. Tasks that end are reported before your next step.",
    schema: COMMAND_SCHEMA,
};

pub const CHECK_BACKGROUND: Tool = Tool {
    name: "check_background",
    title: "Check background",
    // Read: checking again and again is how one waits, not a loop.
    kind: Kind::Read,
    handler: Handler::CheckBackground,
    read_only: false,
    asks: Asks::Never,
    style: None,
    description:
        "A background task's state and its output since the last check; without task_id, every task on a line.",
    schema: r#"{"type": "object", "properties": {"task_id": {"type": "string"}}}"#,
};

pub const KILL_BACKGROUND: Tool = Tool {
    name: "kill_background",
    title: "Stop background",
    kind: Kind::Execute,
    handler: Handler::KillBackground,
    read_only: false,
    asks: Asks::Never,
    style: None,
    description: "Stop a background task and every process it started.",
    schema: r#"{"type": "object", "properties": {"task_id": {"type": "string"}}, "required": ["task_id"]}"#,
};

pub const DIAGNOSTICS: Tool = Tool {
    name: "diagnostics",
    title: "Diagnostics",
    kind: Kind::Read,
    handler: Handler::Diagnostics,
    read_only: true,
    asks: Asks::Never,
    style: None,
    description: "The errors and warnings the language servers report, one a line `path:line:col: severity: message (source)` (lines and columns 1-based). Give paths to check those files as you last wrote them; none: every file that has any.",
    schema: r#"{"type": "object", "properties": {"paths": {"type": "array", "items": {"type": "string"}}}}"#,
};

pub const CODE_NAV: Tool = Tool {
    name: "code_nav",
    title: "Navigate",
    kind: Kind::Read,
    handler: Handler::CodeNav,
    read_only: true,
    asks: Asks::Never,
    style: None,
    description: "Ask the language servers about code. definition, references, implementation, hover: name the symbol by its text in `path`, and its 1-based `line` if it occurs more than once (never a column); locations come back as `path:line: text of that line`. symbols: the symbols of `path` with kind and line. workspace_symbols: symbols matching `query` in the whole workspace.",
    schema: concat!(
        r#"{"type": "object", "properties": {"#,
        r#""action": {"type": "string", "enum": ["definition", "references", "implementation", "hover", "symbols", "workspace_symbols"]}, "#,
        r#""path": {"type": "string"}, "#,
        r#""symbol": {"type": "string", "description": "The symbol's text, e.g. a function's name"}, "#,
        r#""line": {"type": "integer", "description": "1-based line where the symbol occurs"}, "#,
        r#""query": {"type": "string", "description": "For workspace_symbols"}"#,
        r#"}, "required": ["action"]}"#,
    ),
};

pub const RENAME_SYMBOL: Tool = Tool {
    name: "rename_symbol",
    title: "Rename",
    kind: Kind::Edit,
    handler: Handler::Rename,
    read_only: false,
    asks: Asks::Never,
    style: None,
    description: "Rename a symbol everywhere it is used, through the language server (every file it names is edited). Name the symbol by its text in `path`, and its 1-based `line` if it occurs more than once.",
    schema: concat!(
        r#"{"type": "object", "properties": {"#,
        r#""path": {"type": "string"}, "#,
        r#""symbol": {"type": "string"}, "#,
        r#""line": {"type": "integer"}, "#,
        r#""new_name": {"type": "string"}"#,
        r#"}, "required": ["path", "symbol", "new_name"]}"#,
    ),
};

pub const LOAD_SKILL: Tool = Tool {
    name: "load_skill",
    title: "Load skill",
    kind: Kind::Read,
    handler: Handler::LoadSkill,
    read_only: true,
    asks: Asks::Never,
    style: None,
    description: "Load a skill by its name (the system prompt lists them): its instructions, and its folder, whose scripts and references you read and run with the other tools.",
    schema: r#"{"type": "object", "properties": {"name": {"type": "string", "description": "The skill's name"}}, "required": ["name"]}"#,
};

pub const TASK: Tool = Tool {
    name: "task",
    title: "Delegate",
    kind: Kind::Other,
    handler: Handler::Task,
    // Offered in plan mode too, where only a read-only agent (`explore`) may run.
    read_only: true,
    asks: Asks::Never,
    style: None,
    description: "Hand a sub-task to a subagent with a fresh context: it sees only your prompt (give it all it needs), works with your tools (less task) and returns its summary. Several task calls in one response run at the same time. agent: general (default), explore (read-only: reads and searches), or one the system prompt lists.",
    schema: concat!(
        r#"{"type": "object", "properties": {"#,
        r#""prompt": {"type": "string", "description": "The whole task, self-contained"}, "#,
        r#""description": {"type": "string", "description": "A few words shown to the user"}, "#,
        r#""agent": {"type": "string", "description": "general, explore, or an agent the system prompt lists"}"#,
        r#"}, "required": ["prompt"]}"#,
    ),
};

/// The built-in tools, in the order the model is offered them.
pub const BUILTIN: [Tool; 15] = [
    BASH,
    READ_FILE,
    WRITE_FILE,
    EDIT_FILE,
    TODO,
    CREATE_TODOS,
    UPDATE_TODO,
    BACKGROUND_RUN,
    CHECK_BACKGROUND,
    KILL_BACKGROUND,
    DIAGNOSTICS,
    CODE_NAV,
    RENAME_SYMBOL,
    LOAD_SKILL,
    TASK,
];

impl Handler {
    /// A code-intelligence tool: offered only where the session has a source.
    pub fn needs_intel(self) -> bool {
        matches!(self, Handler::Diagnostics | Handler::CodeNav | Handler::Rename)
    }
}

/// An MCP tool as the catalog describes it: the server's code runs, with the model's arguments.
const MCP: Tool = Tool {
    name: "mcp",
    title: "",
    kind: Kind::Other,
    handler: Handler::Mcp,
    read_only: false,
    asks: Asks::Always,
    style: None,
    description: "",
    schema: "null",
};

/// The description of a tool by the name the model calls it (`mcp__<server>__<tool>` for MCP tools).
pub fn find(name: &str) -> Option<&'static Tool> {
    if name.starts_with(crate::mcp::PREFIX) {
        return Some(&MCP);
    }
    BUILTIN.iter().find(|t| t.name == name)
}

/// The title a view shows for a call: the tool's verb (an MCP tool's own name).
pub fn title(name: &str) -> &str {
    match find(name) {
        Some(t) if !t.title.is_empty() => t.title,
        _ => name,
    }
}

pub fn is_planning(name: &str) -> bool {
    find(name).is_some_and(|t| t.kind == Kind::Think)
}

/// A planning tool of `style` (a run in the other style does not know it).
pub fn is_planning_in(name: &str, style: PlanningStyle) -> bool {
    find(name).is_some_and(|t| t.kind == Kind::Think && t.style.is_none_or(|s| s == style))
}

/// Whether a read-only OS sandbox can run shell commands here: plan mode offers `bash` only then. The
/// network stays off in it (`sandbox_for`), so the probe is the one without network.
fn read_only_sandbox() -> bool {
    crate::sandbox::availability(false).is_ok()
}

/// The sandbox a shell command of a run in `mode` runs in: the user's settings, and in plan mode always
/// read-only and offline, whatever they say (`sandbox: off` included: planning changes nothing).
pub fn sandbox_for(mode: Mode, settings: SandboxSettings) -> SandboxSettings {
    match mode {
        Mode::Default => settings,
        Mode::Plan => SandboxSettings::of(SandboxMode::ReadOnly, false),
    }
}

impl Tool {
    /// Whether a run in `mode` may call it. Plan mode: only what changes nothing, and the shell only
    /// where a read-only sandbox holds it.
    pub fn allowed(&self, mode: Mode) -> bool {
        self.allowed_where(mode, mode == Mode::Plan && read_only_sandbox())
    }

    /// `allowed`, with whether a read-only sandbox can run commands given (the tests choose).
    fn allowed_where(&self, mode: Mode, sandbox: bool) -> bool {
        match mode {
            Mode::Default => true,
            // The shell in the read-only sandbox; never background commands (nothing may keep running).
            Mode::Plan => self.read_only || (self.handler == Handler::Shell && sandbox),
        }
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: Cow::Borrowed(self.name),
            description: Cow::Borrowed(self.description),
            input_schema: Schema::Static(self.schema),
        }
    }
}

/// The tools the model is offered: the built-in ones of this planning style (the code-intelligence ones
/// only with `intel`, a source; `load_skill` only with `skills`, a skill the model may load), then the MCP
/// servers' (`mcp__<server>__<tool>`), less what `mode` forbids.
pub fn specs(style: PlanningStyle, mode: Mode, mcp: Option<&McpTools>, intel: bool, skills: bool) -> Vec<ToolSpec> {
    // Only plan mode asks the sandbox (and waits for its trial): the default mode's first request does not.
    specs_where(style, mode, mcp, (intel, skills), mode == Mode::Plan && read_only_sandbox())
}

/// `has`: a source of code intelligence, a skill.
fn specs_where(
    style: PlanningStyle,
    mode: Mode,
    mcp: Option<&McpTools>,
    has: (bool, bool),
    sandbox: bool,
) -> Vec<ToolSpec> {
    let offered = |t: &&Tool| {
        t.style.is_none_or(|s| s == style)
            && t.allowed_where(mode, sandbox)
            && (has.0 || !t.handler.needs_intel())
            && (has.1 || t.handler != Handler::LoadSkill)
    };
    let mut tools: Vec<ToolSpec> = BUILTIN.iter().filter(offered).map(Tool::spec).collect();
    if MCP.allowed_where(mode, sandbox) {
        tools.extend(mcp.into_iter().flat_map(McpTools::specs));
    }
    tools
}

/// A call `mode` forbids (the model called a tool it was not offered): the refusal it reads. Nothing
/// of the call runs, not even its approval question.
pub fn refusal(name: &str, mode: Mode) -> Option<String> {
    refusal_where(name, mode, mode == Mode::Plan && read_only_sandbox())
}

fn refusal_where(name: &str, mode: Mode, sandbox: bool) -> Option<String> {
    let tool = find(name)?;
    if tool.allowed_where(mode, sandbox) {
        return None;
    }
    Some(format!(
        "Error: plan mode: {name} is not available while planning (nothing may change until the user approves the plan). \
Use read_file and the planning tool, then end your turn."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(specs: &[ToolSpec]) -> Vec<&str> {
        specs.iter().map(|s| s.name.as_ref()).collect()
    }

    #[test]
    fn a_background_command_takes_the_same_input_as_bash() {
        let seed = serde_json::json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]});
        assert_eq!(BASH.spec().input_schema, seed.clone().into());
        assert_eq!(BACKGROUND_RUN.spec().input_schema, seed.into());
    }

    #[test]
    fn every_built_in_schema_is_a_json_object_and_is_sent_as_written() {
        for t in BUILTIN {
            let spec = t.spec();
            let value = spec.input_schema.value();
            assert_eq!(value["type"], "object", "{}", t.name);
            assert!(value["properties"].is_object(), "{}", t.name);
            // In a request the schema is the text itself, not a re-encoding of it.
            let sent = serde_json::to_string(&spec).unwrap();
            assert!(sent.contains(t.schema), "{}: {sent}", t.name);
        }
    }

    /// What a run offers by default (the `todo` style, no code intelligence), and the code-intelligence tools.
    const DEFAULT: [&str; 9] = [
        "bash",
        "read_file",
        "write_file",
        "edit_file",
        "todo",
        "background_run",
        "check_background",
        "kill_background",
        "task",
    ];
    const INTEL: [&str; 3] = ["diagnostics", "code_nav", "rename_symbol"];

    #[test]
    fn each_style_and_mode_offers_its_tools() {
        for sandbox in [false, true] {
            assert_eq!(names(&specs_where(PlanningStyle::Todo, Mode::Default, None, (false, false), sandbox)), DEFAULT);
        }
        assert_eq!(
            names(&specs_where(PlanningStyle::Todo, Mode::Plan, None, (false, false), false)),
            ["read_file", "todo", "task"]
        );
        assert_eq!(
            names(&specs_where(PlanningStyle::Tasks, Mode::Plan, None, (false, false), false)),
            ["read_file", "create_todos", "update_todo", "task"]
        );
        // With a read-only sandbox the shell comes back, and only the shell.
        assert_eq!(
            names(&specs_where(PlanningStyle::Todo, Mode::Plan, None, (false, false), true)),
            ["bash", "read_file", "todo", "task"]
        );
    }

    #[test]
    fn code_intelligence_is_offered_only_with_a_source_and_read_only_in_plan_mode() {
        assert_eq!(
            names(&specs_where(PlanningStyle::Todo, Mode::Default, None, (true, false), false)),
            [&DEFAULT[..DEFAULT.len() - 1], &INTEL[..], &["task"]].concat()
        );
        assert_eq!(
            names(&specs_where(PlanningStyle::Todo, Mode::Plan, None, (true, false), false)),
            ["read_file", "todo", "diagnostics", "code_nav", "task"]
        );
        assert!(refusal_where("rename_symbol", Mode::Plan, true).is_some());
    }

    #[test]
    fn load_skill_is_offered_only_with_a_skill_and_in_plan_mode_too() {
        let with =
            |mode, skills| names(&specs_where(PlanningStyle::Todo, mode, None, (false, skills), false)).join(" ");
        assert!(!with(Mode::Default, false).contains("load_skill"));
        assert!(
            with(Mode::Default, true).ends_with("kill_background load_skill task"),
            "{}",
            with(Mode::Default, true)
        );
        // It changes nothing: plan mode offers it, and does not refuse it.
        assert_eq!(with(Mode::Plan, true), "read_file todo load_skill task");
        assert_eq!(refusal_where("load_skill", Mode::Plan, false), None);
    }

    #[test]
    fn plan_mode_refuses_what_writes_and_nothing_else() {
        for name in ["bash", "write_file", "edit_file", "mcp__fs__write", "background_run", "kill_background"] {
            let why = refusal_where(name, Mode::Plan, false).unwrap();
            assert!(why.starts_with("Error: plan mode: "), "{why}");
            assert_eq!(refusal_where(name, Mode::Default, false), None);
        }
        for name in ["read_file", "todo", "update_todo", "no_such_tool"] {
            assert_eq!(refusal_where(name, Mode::Plan, false), None, "{name}");
        }
        assert_eq!(refusal_where("bash", Mode::Plan, true), None, "bash runs in the read-only sandbox");
        for name in
            ["write_file", "edit_file", "mcp__fs__write", "background_run", "check_background", "kill_background"]
        {
            assert!(refusal_where(name, Mode::Plan, true).is_some(), "{name}");
        }
    }

    #[test]
    fn plan_mode_commands_run_read_only_and_offline() {
        let user = SandboxSettings::of(SandboxMode::Off, true);
        assert_eq!(sandbox_for(Mode::Default, user), user);
        assert_eq!(sandbox_for(Mode::Plan, user), SandboxSettings::of(SandboxMode::ReadOnly, false));
    }

    #[test]
    fn descriptions_views_read() {
        assert_eq!(title("bash"), "Run");
        assert_eq!(title("mcp__fs__read"), "mcp__fs__read");
        assert_eq!(find("write_file").map(|t| t.asks), Some(Asks::ProtectedPath));
        assert_eq!(find("mcp__a__b").map(|t| (t.kind, t.asks)), Some((Kind::Other, Asks::Always)));
        assert!(is_planning("create_todos") && !is_planning("read_file"));
        assert!(is_planning_in("todo", PlanningStyle::Todo) && !is_planning_in("todo", PlanningStyle::Tasks));
        assert!(is_planning_in("update_todo", PlanningStyle::Tasks) && !is_planning_in("bash", PlanningStyle::Tasks));
        assert_eq!(find("edit_file").map(|t| t.handler), Some(Handler::EditFile));
        assert!(find("nope").is_none());
    }
}
