//! The `stepwise.*` commands of `workspace/executeCommand`, parsed once into [`Command`]: one variant per
//! command with its own typed argument, and each command's result type ([`ExecuteCommand`]).

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tower_lsp_server::jsonrpc::Error;

use super::{AppliedSession, EditedPlan, ImageData, Reviewed, Rewound, RunStarted, SessionList, SessionMade};
use crate::checkpoint::{Info, Restore};
use crate::plan::{EditItem, Mode, PlanComment};

/// A command as rust-analyzer types its requests: its name, its argument (the first of `arguments`) and
/// its result.
pub trait ExecuteCommand {
    type Arguments: DeserializeOwned + JsonSchema;
    type Result: Serialize + JsonSchema;
    const COMMAND: &'static str;
}

/// Declares each command: its marker type (in [`cmd`]), its [`Command`] variant, argument and result.
macro_rules! commands {
    ($($variant:ident $name:literal ($args:ty) -> $result:ty;)*) => {
        /// The commands' marker types, for [`ExecuteCommand`].
        pub mod cmd {
            use super::*;
            $(
                pub enum $variant {}
                impl ExecuteCommand for $variant {
                    type Arguments = $args;
                    type Result = $result;
                    const COMMAND: &'static str = $name;
                }
            )*
        }

        /// A parsed `workspace/executeCommand`.
        #[derive(Debug)]
        pub enum Command {
            $($variant($args),)*
        }

        /// `workspace/executeCommand` commands, as the server announces them.
        pub const COMMANDS: &[&str] = &[$($name,)*];

        impl Command {
            /// Parses `command` and its first argument; a malformed one is an invalid-params error that
            /// names the command and the field.
            pub fn parse(command: &str, arguments: &[Value]) -> Result<Command, Error> {
                match command {
                    $($name => Ok(Command::$variant(argument($name, arguments)?)),)*
                    other => Err(Error::invalid_params(format!("unknown command: {other}"))),
                }
            }

            /// Each command's name with its argument's and its result's schema.
            pub(super) fn schemas(
                args: &mut schemars::SchemaGenerator,
                results: &mut schemars::SchemaGenerator,
            ) -> Vec<(&'static str, schemars::Schema, schemars::Schema)> {
                vec![$(($name, args.subschema_for::<$args>(), results.subschema_for::<$result>()),)*]
            }
        }
    };
}

commands! {
    Run "stepwise.run" (RunArgs) -> RunStarted;
    Cancel "stepwise.cancel" (WorkspaceArgs) -> ();
    Reset "stepwise.reset" (WorkspaceArgs) -> ();
    Plan "stepwise.plan" (WorkspaceArgs) -> crate::lsp::ext::Plan;
    Compact "stepwise.compact" (WorkspaceArgs) -> ();
    EditPlan "stepwise.editPlan" (EditPlanArgs) -> EditedPlan;
    Steer "stepwise.steer" (SteerArgs) -> ();
    Checkpoints "stepwise.checkpoints" (WorkspaceArgs) -> Vec<Info>;
    Rewind "stepwise.rewind" (RewindArgs) -> Rewound;
    Conversation "stepwise.conversation" (WorkspaceArgs) -> crate::lsp::ext::Conversation;
    Changes "stepwise.changes" (ChangesArgs) -> crate::lsp::ext::Changes;
    Review "stepwise.review" (ReviewArgs) -> Reviewed;
    CommentPlan "stepwise.commentPlan" (CommentPlanArgs) -> RunStarted;
    ApprovePlan "stepwise.approvePlan" (ApprovePlanArgs) -> RunStarted;
    KillBackground "stepwise.killBackground" (KillBackgroundArgs) -> String;
    NewSession "stepwise.newSession" (NewSessionArgs) -> SessionMade;
    Sessions "stepwise.sessions" (WorkspaceArgs) -> SessionList;
    ApplySession "stepwise.applySession" (SessionArgs) -> AppliedSession;
    CloseSession "stepwise.closeSession" (CloseSessionArgs) -> ();
    Skills "stepwise.skills" (WorkspaceArgs) -> crate::lsp::ext::Skills;
    Image "stepwise.image" (ImageArgs) -> ImageData;
    CancelSubagent "stepwise.cancelSubagent" (CancelSubagentArgs) -> ();
}

impl Command {
    /// The workspace folder and the session the command names, as far as it names them.
    pub fn target(&self) -> (Option<&str>, Option<&str>) {
        match self {
            Command::Run(a) => of(&a.workspace, &a.session),
            Command::Cancel(a)
            | Command::Reset(a)
            | Command::Plan(a)
            | Command::Compact(a)
            | Command::Checkpoints(a)
            | Command::Conversation(a)
            | Command::Sessions(a)
            | Command::Skills(a) => of(&a.workspace, &a.session),
            Command::EditPlan(a) => of(&a.workspace, &a.session),
            Command::Steer(a) => of(&a.workspace, &a.session),
            Command::Rewind(a) => of(&a.workspace, &a.session),
            Command::Changes(a) => of(&a.workspace, &a.session),
            Command::Review(a) => of(&a.workspace, &a.session),
            Command::CommentPlan(a) => of(&a.workspace, &a.session),
            Command::ApprovePlan(a) => of(&a.workspace, &a.session),
            Command::KillBackground(a) => of(&a.workspace, &a.session),
            Command::Image(a) => of(&a.workspace, &a.session),
            Command::CancelSubagent(a) => of(&a.workspace, &a.session),
            Command::NewSession(a) => (a.workspace.as_deref(), None),
            Command::ApplySession(a) => (None, Some(a.session.as_str())),
            Command::CloseSession(a) => (None, Some(a.session.as_str())),
        }
    }
}

fn of<'a>(w: &'a Option<String>, s: &'a Option<String>) -> (Option<&'a str>, Option<&'a str>) {
    (w.as_deref(), s.as_deref())
}

/// `stepwise.newSession`: a session beside the folder's others, in a worktree of its own if asked.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct NewSessionArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// How views name it (default: `Session <n>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// In a git worktree of its own on the branch `stepwise/<session>` (a copy where the folder is no
    /// git repository): nothing it does reaches the folder before `stepwise.applySession`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<bool>,
}

/// `stepwise.applySession`.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct SessionArgs {
    pub session: String,
}

/// `stepwise.closeSession`.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct CloseSessionArgs {
    pub session: String,
    /// Forget the session and remove its worktree with what it holds (an editor asks the user first when
    /// the worktree has changes not applied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discard: Option<bool>,
}

/// `stepwise.killBackground`: stop a background task (the user's Stop).
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KillBackgroundArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// `bg-<n>`.
    pub task_id: String,
}

/// `stepwise.cancelSubagent`: end one child agent (`task`) alone (the user's Stop on its card).
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct CancelSubagentArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// `sa-<n>`.
    pub id: String,
}

/// Commands that take only the folder (without it: the only folder, or the first).
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct WorkspaceArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// `stepwise.run`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunArgs {
    /// May be empty when `images` are given.
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// `plan` plans first (`default`: acts, whatever `planFirst` says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Images the prompt comes with (PNG, JPEG, GIF or WebP; at most 20, each up to 3.75 MB and 8000
    /// pixels a side).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<PromptImage>,
}

/// An image of a prompt: a file of the workspace, or the bytes themselves.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PromptImage {
    /// Relative to the workspace, or absolute inside it.
    File { path: String },
    /// The bytes in base64, and their media type (`image/png`, `image/jpeg`, `image/gif`, `image/webp`).
    Data {
        #[serde(rename = "mediaType")]
        media_type: String,
        data: String,
    },
}

impl PromptImage {
    pub fn given(&self) -> crate::images::Given<'_> {
        match self {
            PromptImage::File { path } => crate::images::Given::Path(path),
            PromptImage::Data { media_type, data } => crate::images::Given::Data { media_type: Some(media_type), data },
        }
    }
}

/// `stepwise.image`: an image of the conversation, by the id its entry gives.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct ImageArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub id: String,
}

/// `stepwise.editPlan`: the whole list, or the same as text in the plan's render form.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditPlanArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<EditItem>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The revision the edit was made on; an older one than the plan's is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_revision: Option<u64>,
}

/// `stepwise.steer`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SteerArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub text: String,
}

/// `stepwise.rewind`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RewindArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The checkpoint's id.
    pub checkpoint: String,
    /// What to put back (default `both`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<Restore>,
}

/// `stepwise.changes`: which run (default: the latest that changed files), or since which checkpoint.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangesArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReviewAction {
    Keep,
    Undo,
    Comment,
}

/// `stepwise.review`: the file (relative), what to do, which hunks (default: all).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub path: String,
    pub action: ReviewAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<Vec<usize>>,
    /// With `comment`: what to tell the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
}

/// `stepwise.commentPlan`: comments, each about an item (`id`) or the whole plan.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CommentPlanArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub comments: Vec<PlanComment>,
}

/// `stepwise.approvePlan`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovePlanArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The session (`stepwise.newSession`'s id); without it, the folder's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_revision: Option<u64>,
    /// Start from the task and the approved plan only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_context: Option<bool>,
}

/// The command's first argument as `T` (none, or `null`: as `{}`).
fn argument<T: DeserializeOwned>(command: &str, arguments: &[Value]) -> Result<T, Error> {
    let object = match arguments.first() {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(other) => {
            return Err(Error::invalid_params(format!(
                "{command}: its argument is an object (docs/protocol.md), not {other}"
            )))
        }
    };
    let parse = |o: Map<String, Value>| serde_json::from_value::<T>(Value::Object(o)).map_err(|e| quoted(&e));
    let why = match parse(object.clone()) {
        Ok(args) => return Ok(args),
        Err(why) => why,
    };
    // serde's message names a missing field but not a field of the wrong shape: the culprit is the field
    // without which the error changes into a success or into that field missing.
    let culprit = object.keys().find(|key| {
        let mut rest = object.clone();
        rest.remove(*key);
        match parse(rest) {
            Ok(_) => true,
            Err(e) => e == format!("missing field \"{key}\""),
        }
    });
    Err(Error::invalid_params(match culprit {
        Some(field) => format!("{command}: \"{field}\": {why}"),
        None => format!("{command}: {why}"),
    }))
}

/// serde's message with JSON's quotes instead of backticks.
fn quoted(e: &serde_json::Error) -> String {
    e.to_string().replace('`', "\"")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn error(command: &str, arg: Value) -> String {
        Command::parse(command, &[arg]).unwrap_err().message.into_owned()
    }

    #[test]
    fn each_command_parses_into_its_own_variant() {
        let c = Command::parse("stepwise.run", &[json!({"prompt": "go", "mode": "plan", "workspace": "file:///w"})]);
        let Ok(Command::Run(a)) = c else { panic!("{c:?}") };
        assert_eq!((a.prompt.as_str(), a.mode, a.workspace.as_deref()), ("go", Some(Mode::Plan), Some("file:///w")));
        assert!(matches!(Command::parse("stepwise.cancel", &[]), Ok(Command::Cancel(_))));
        assert!(matches!(Command::parse("stepwise.plan", &[Value::Null]), Ok(Command::Plan(_))));
        let c = Command::parse("stepwise.review", &[json!({"path": "a", "action": "undo", "hunks": [2]})]);
        let Ok(Command::Review(r)) = c else { panic!("{c:?}") };
        assert_eq!((r.action, r.hunks), (ReviewAction::Undo, Some(vec![2])));
        // Fields a command does not read are left alone (an editor may send one bag to every command).
        assert!(matches!(Command::parse("stepwise.cancel", &[json!({"prompt": 1})]), Ok(Command::Cancel(_))));
        assert!(matches!(Command::parse("stepwise.skills", &[]), Ok(Command::Skills(_))));
        let c = Command::parse("stepwise.cancelSubagent", &[json!({"id": "sa-2", "session": "s1"})]);
        let Ok(Command::CancelSubagent(a)) = c else { panic!("{c:?}") };
        assert_eq!((a.id.as_str(), a.session.as_deref()), ("sa-2", Some("s1")));
        assert_eq!(COMMANDS.len(), 22);
        let c = Command::parse("stepwise.plan", &[json!({"session": "s1"})]).unwrap();
        assert_eq!(c.target(), (None, Some("s1")));
        let c = Command::parse(
            "stepwise.run",
            &[json!({"prompt": "", "images": [{"path": "shot.png"}, {"mediaType": "image/png", "data": "iVBO"}]})],
        );
        let Ok(Command::Run(a)) = c else { panic!("{c:?}") };
        assert!(matches!(&a.images[0], PromptImage::File { path } if path == "shot.png"));
        assert!(
            matches!(&a.images[1], PromptImage::Data { media_type, data } if media_type == "image/png" && data == "iVBO")
        );
        let e = error("stepwise.run", json!({"prompt": "x", "images": [{"bytes": "iVBO"}]}));
        assert!(e.starts_with("stepwise.run: \"images\": "), "{e}");
        let c = Command::parse("stepwise.image", &[json!({"id": "00ff"})]);
        assert!(matches!(c, Ok(Command::Image(ImageArgs { id, .. })) if id == "00ff"));
    }

    #[test]
    fn a_malformed_argument_names_the_command_and_the_field() {
        assert_eq!(error("stepwise.run", json!({})), "stepwise.run: missing field \"prompt\"");
        assert_eq!(
            error("stepwise.run", json!({"prompt": 3})),
            "stepwise.run: \"prompt\": invalid type: integer \"3\", expected a string"
        );
        let e = error("stepwise.rewind", json!({"checkpoint": "1", "restore": "everything"}));
        assert!(e.starts_with("stepwise.rewind: \"restore\": unknown variant \"everything\""), "{e}");
        assert!(e.contains("\"files\""), "{e}");
        let e = error("stepwise.review", json!({"path": "a", "action": "keep", "hunks": ["x"]}));
        assert!(e.starts_with("stepwise.review: \"hunks\": invalid type"), "{e}");
        assert_eq!(
            error("stepwise.run", json!(42)),
            "stepwise.run: its argument is an object (docs/protocol.md), not 42"
        );
        let unknown = Command::parse("stepwise.nope", &[]).unwrap_err();
        assert_eq!(
            (unknown.code, unknown.message.as_ref()),
            (tower_lsp_server::jsonrpc::ErrorCode::InvalidParams, "unknown command: stepwise.nope")
        );
    }
}
