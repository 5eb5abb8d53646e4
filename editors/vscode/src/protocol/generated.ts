// Generated from docs/protocol.schema.json (the Rust types in server/src/lsp/ext) by
// tests/tests/protocol_schema.rs: `UPDATE=1 cargo test -p stepwise-tests --test protocol_schema`.
// Do not edit.

/**
 * `stepwise.applySession`'s answer: what was brought into the folder, and what was left alone because
 * the folder changed it since the session began (or it could not be carried).
 */
export interface AppliedSession {
  applied: string[];
  conflicts: string[];
  /** The run the applied files belong to in the folder's session (its review lists them). */
  runId?: string;
}

/** `stepwise.approvePlan`. */
export interface ApprovePlanArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  baseRevision?: number;
  /** Start from the task and the approved plan only. */
  clearContext?: boolean;
}

/** `stepwise/ask`'s result. */
export interface AskAnswer {
  answer: AskChoice;
}

/**
 * The user's answer: `allowSession` also allows what is asked of this kind (this MCP server, running
 * outside the sandbox, or the agent's own tools) until the session is reset.
 */
export type AskChoice = 'allow' | 'allowSession' | 'deny';

/** What a question is about. */
export type AskKind = 'command' | 'protectedWrite' | 'unsandboxed' | 'mcpTool';

/**
 * `stepwise/ask`'s params: the user's leave for one tool call, typed so a client shows it in the call's
 * place without reading `message` (the same question in one line, for a client that only shows text).
 */
export interface AskParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  runId: string;
  /** The tool call asked about (`stepwise/toolCall`'s `id`). */
  callId: string;
  kind: AskKind;
  message: string;
  /** `command` and `unsandboxed`: the shell command. */
  command?: string;
  /** `unsandboxed`: what the sandbox stopped. */
  stopped?: string;
  /** `protectedWrite`: the path as the model gave it, and why it is protected. */
  path?: string;
  why?: string;
  /** `mcpTool`: the MCP server and its tool. */
  server?: string;
  tool?: string;
  /** Asked by a child agent (`task`): its id, `sa-<n>` (the message names it too). */
  subagent?: string;
}

/** `stepwise/assistantText`: a piece of the model's text as it streams. */
export interface AssistantTextParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  runId: string;
  text: string;
}

/**
 * `stepwise/background`: the folder's background commands (`background_run`), sent when one starts,
 * prints (at most about ten times a second) or ends.
 */
export interface BackgroundParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  tasks: BackgroundTask[];
}

/** One task as the views show it (`stepwise/background`). */
export interface BackgroundTask {
  /** `bg-<n>`. */
  id: string;
  command: string;
  /** `running`, `exited <code>` or `killed by <what>`. */
  state: string;
  running: boolean;
  /** The last bytes of its output. */
  tail: string;
}

/** Who made the latest change. */
export type By = 'model' | 'user';

/** `stepwise.cancelSubagent`: end one child agent (`task`) alone (the user's Stop on its card). */
export interface CancelSubagentArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  /** `sa-<n>`. */
  id: string;
}

export type ChangeStatus = 'modified' | 'created' | 'deleted';

/** `stepwise.changes`: what the agent changed in a run, or since a checkpoint. */
export interface Changes {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  /** The run the changes are of (the checkpoint's run, for `checkpoint`); `null` when there is none. */
  runId: string | null;
  files: FileChanges[];
}

/** `stepwise.changes`: which run (default: the latest that changed files), or since which checkpoint. */
export interface ChangesArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  runId?: string;
  checkpoint?: string;
}

/** A checkpoint as `stepwise.checkpoints` lists it (serialises to the contract's shape). */
export interface CheckpointInfo {
  id: string;
  runId: string;
  round: number;
  prompt: string;
  step?: string;
  /** UTC, RFC 3339. */
  time: string;
  /** Every path changed after the checkpoint (what a rewind to it puts back), relative, sorted. */
  files: string[];
}

/** `stepwise/checkpoint`. */
export interface CheckpointParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  id: string;
  runId: string;
  round: number;
  step?: string;
}

/** `stepwise.closeSession`. */
export interface CloseSessionArgs {
  session: string;
  /**
   * Forget the session and remove its worktree with what it holds (an editor asks the user first when
   * the worktree has changes not applied).
   */
  discard?: boolean;
}

/** `stepwise.commentPlan`: comments, each about an item (`id`) or the whole plan. */
export interface CommentPlanArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  comments: PlanComment[];
}

/** `stepwise/compacted`. */
export interface CompactedParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  runId: string;
  tokensBefore: number;
  tokensAfter: number;
  summaryError?: string;
}

/** `stepwise.conversation`: the saved conversation as a view shows it, oldest first. */
export interface Conversation {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  entries: Entry[];
}

/** One line of a `<diagnostics>` block: an error with its place, a file that was not checked, or a note. */
export interface DiagnosticLine {
  /** The file, relative to the folder, as the model read it; left out for a note about no one file. */
  path?: string;
  /** 1-based; left out for a line about the whole file (`not checked`). */
  line?: number;
  /** 1-based. */
  column?: number;
  /** The line as the model read it (`path:line:col: error: message (source)`). */
  text: string;
}

/** `stepwise/query`'s result for `diagnostics`. */
export interface DiagnosticsAnswer {
  items?: DocumentDiagnostics[];
}

/**
 * `stepwise/diagnostics`: the `<diagnostics>` block the model was told after a round that changed files,
 * with the id of the round's last call that changed a file (a view shows the lines under it).
 */
export interface DiagnosticsParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  runId: string;
  calls: string[];
  lines: DiagnosticLine[];
}

/** One document's diagnostics as the editor has them. */
export interface DocumentDiagnostics {
  uri: string;
  /** LSP `Diagnostic`s. */
  diagnostics?: unknown[];
  /**
   * The diagnostics were published for the version asked for (or later); `false`: the wait ran out, or the
   * editor knows none of its servers will check the document.
   */
  settled?: boolean;
}

/** One item as an editor sends it; an item without `id` is new. */
export interface EditItem {
  id?: string;
  text: string;
  status?: string;
  activeForm?: string;
}

/** `stepwise.editPlan`: the whole list, or the same as text in the plan's render form. */
export interface EditPlanArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  items?: EditItem[];
  text?: string;
  /** The revision the edit was made on; an older one than the plan's is refused. */
  baseRevision?: number;
}

/** `stepwise.editPlan`: the plan as the edit left it. */
export interface EditedPlan {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  items: PlanItem[];
  completed: number;
  total: number;
  revision: number;
}

export interface Entry {
  kind: EntryKind;
  /** The run the entry belongs to; empty when no checkpoint tells (before the first one kept). */
  runId: string;
  text?: string;
  tool?: ToolEntry;
  /** Images the entry shows: a prompt's, or those a tool showed the model. */
  images?: ImageEntry[];
  /** A child agent's entry (`task`): its id, `sa-<n>`; it follows the `task` call that made it. */
  subagent?: string;
}

export type EntryKind = 'user' | 'assistant' | 'tool' | 'reminder' | 'steer' | 'planEdit' | 'background' | 'diagnostics';

/** Why a run ended in `error`, so an editor can offer the right next step without reading the text. */
export type ErrorKind = 'setup' | 'model' | 'internal';

/** A changed file as `stepwise.changes` lists it. */
export interface FileChanges {
  /** Relative to the workspace, `/`-separated. */
  path: string;
  status: ChangeStatus;
  /** The text before the agent's first change (`null`: the file did not exist, or is not text). */
  before: string | null;
  /** The text now (`null`: the file is gone, or is not text). */
  after: string | null;
  /** The plan steps in progress in the rounds that changed it, first first. */
  steps: string[];
  /** Every hunk is reviewed. */
  reviewed: boolean;
  hunks: Hunk[];
  /**
   * Other sessions of the folder whose commands ran at the same time as the one that changed it and
   * also found it changed: whose change it is cannot be told (Undo and rewind leave it alone).
   */
  sharedWith?: string[];
}

export type FinishReason = 'end_turn' | 'cancelled' | 'error' | 'loop_detected' | 'max_rounds' | 'max_tokens' | 'plan_ready';

/**
 * One hunk: a run of changed lines. Lines are 0-based, `end` exclusive; `start..end` in the text now,
 * `beforeStart..beforeEnd` in `before` (an empty range is where lines were only added or removed).
 */
export interface Hunk {
  index: number;
  start: number;
  end: number;
  beforeStart: number;
  beforeEnd: number;
  reviewed: boolean;
}

/** `stepwise.image`: an image of the conversation, by the id its entry gives. */
export interface ImageArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  id: string;
}

/** `stepwise.image`: the image's bytes in base64, and their media type. */
export interface ImageData {
  mediaType: string;
  data: string;
}

/** An image of an entry, by reference: `stepwise.image` gives its bytes, so entries stay small. */
export interface ImageEntry {
  mediaType: string;
  /** What `stepwise.image` takes (the same for the same image, while the server runs). */
  id: string;
}

/** `stepwise.killBackground`: stop a background task (the user's Stop). */
export interface KillBackgroundArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  /** `bg-<n>`. */
  taskId: string;
}

/** `stepwise/mcp`: how the folder's MCP servers started (failed ones with why). */
export interface McpParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  servers: McpServer[];
}

/** One MCP server's start. */
export interface McpServer {
  name: string;
  /** Where it was configured. */
  origin: string;
  /** `running` or `failed`. */
  state: string;
  /** How many of its tools the model is offered. */
  tools: number;
  error?: string;
}

/** How a run may act. In `Plan` the tools offered change nothing (`tools::catalog` decides which). */
export type Mode = 'default' | 'plan';

/** `stepwise.newSession`: a session beside the folder's others, in a worktree of its own if asked. */
export interface NewSessionArgs {
  workspace?: string;
  /** How views name it (default: `Session <n>`). */
  title?: string;
  /**
   * In a git worktree of its own on the branch `stepwise/<session>` (a copy where the folder is no
   * git repository): nothing it does reaches the folder before `stepwise.applySession`.
   */
  worktree?: boolean;
}

export interface PathReason {
  path: string;
  reason: string;
}

export interface Pending {
  path: string;
  hunks: number;
}

export type Phase = 'started' | 'finished';

/** What the latest change was, so an editor can say it truthfully (`by` says only who). */
export type PlanChange = 'update' | 'edit' | 'approved' | 'rewind' | 'reset';

/** One comment on the plan: about one item, or about the whole plan. */
export interface PlanComment {
  id?: string;
  text: string;
}

export interface PlanItem {
  id: string;
  text: string;
  status: PlanStatus;
  activeForm?: string;
}

/** `stepwise/plan` (also the answer to `stepwise.plan`). */
export interface PlanParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  items: PlanItem[];
  completed: number;
  total: number;
  /** Raised by every change. */
  revision: number;
  /** Who made the latest change. */
  by: By;
  /** What the latest change was; left out when nothing changed since the session opened (a restored plan). */
  change?: PlanChange;
}

export type PlanStatus = 'pending' | 'in_progress' | 'completed' | 'failed';

/** An image of a prompt: a file of the workspace, or the bytes themselves. */
export type PromptImage = {
  path: string;
} | {
  mediaType: string;
  data: string;
};

/** A document the agent wrote, at the version its text had then. */
export interface QueryDocument {
  uri: string;
  /** The open document's version after the agent's edit; left out for a file the editor has not opened. */
  version?: number;
}

/** What `stepwise/query` asks (docs/protocol.md, "Code intelligence"). */
export type QueryKind = 'diagnostics' | 'definition' | 'references' | 'implementation' | 'hover' | 'documentSymbol' | 'workspaceSymbol' | 'rename';

/** `stepwise/query`'s params: the server asks the editor what its language servers know. */
export interface QueryParams {
  kind: QueryKind;
  uri?: string;
  position?: QueryPosition;
  /** `workspaceSymbol`'s search text. */
  query?: string;
  /** `rename`'s new name. */
  newName?: string;
  /** `diagnostics`: answer once each document's diagnostics were published for this version (or later). */
  documents?: QueryDocument[];
  /** `diagnostics`: the longest the editor waits for them. */
  waitMs?: number;
}

/** A position in a document, in the negotiated position encoding (0-based). */
export interface QueryPosition {
  line: number;
  character: number;
}

/** `stepwise/reminder`: the model was nagged to update its plan. */
export interface ReminderParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  text: string;
}

export type Restore = 'both' | 'files' | 'conversation';

export type ReviewAction = 'keep' | 'undo' | 'comment';

/** `stepwise.review`: the file (relative), what to do, which hunks (default: all). */
export interface ReviewArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  path: string;
  action: ReviewAction;
  hunks?: number[];
  /** With `comment`: what to tell the agent. */
  text?: string;
  runId?: string;
  checkpoint?: string;
}

/** `stepwise/review`: the files with unreviewed changes and how many unreviewed hunks each has. */
export interface ReviewParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  pending: Pending[];
}

/** `stepwise.review`'s answer. */
export interface Reviewed {
  /** Paths whose listed hunks (or whole change) were put back as they were. */
  undone: string[];
  /** Paths someone else changed after the agent's last change: left alone. */
  conflicts: string[];
  /** Paths that could not be put back, with why. */
  failed: PathReason[];
}

/** `stepwise.rewind`. */
export interface RewindArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  /** The checkpoint's id. */
  checkpoint: string;
  /** What to put back (default `both`). */
  restore?: Restore;
}

/** `stepwise.rewind`'s answer. */
export interface Rewound {
  /** Paths put back as they were at the checkpoint. */
  files: string[];
  /** The conversation and the plan went back too. */
  conversation: boolean;
  /** Paths someone else changed after the agent's last change: left alone. */
  conflicts: string[];
  /** Paths the checkpoint cannot put back, with why. */
  unrestorable: PathReason[];
  /** Paths that could not be put back, with why. */
  failed: PathReason[];
}

/** `stepwise.run`. */
export interface RunArgs {
  /** May be empty when `images` are given. */
  prompt: string;
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  /** `plan` plans first (`default`: acts, whatever `planFirst` says). */
  mode?: Mode;
  /**
   * Images the prompt comes with (PNG, JPEG, GIF or WebP; at most 20, each up to 3.75 MB and 8000
   * pixels a side).
   */
  images?: PromptImage[];
}

/** `stepwise.run`, `stepwise.commentPlan`, `stepwise.approvePlan`: the run goes on in the background. */
export interface RunStarted {
  runId: string;
}

export type RunState = 'running' | 'waiting' | 'idle';

/** `stepwise/saveDocuments`' params. */
export interface SaveDocumentsParams {
  uris: string[];
}

/** `stepwise/saveDocuments`' result (`null`: all saved). */
export interface SavedDocuments {
  saved?: string[];
}

/** `stepwise.applySession`. */
export interface SessionArgs {
  session: string;
}

export interface SessionInfo {
  session: string;
  title: string;
  /** `running`, `waiting`, `idle`, or `closed`. */
  state: string;
  worktree?: string;
  branch?: string;
  /** A worktree session's files changed and not applied yet (left out when it cannot be told). */
  unapplied?: number;
  /** The plan's progress, `completed/total` (left out for a closed session or an empty plan). */
  progress?: string;
}

/**
 * `stepwise.sessions`: the folder's sessions, its own first, then the others by age (closed ones too,
 * which any command naming them reopens).
 */
export interface SessionList {
  sessions: SessionInfo[];
}

/** `stepwise.newSession`'s answer. */
export interface SessionMade {
  session: string;
  /** The worktree's folder (the session's workspace), for a worktree session. */
  worktree?: string;
  /** Its branch, for a git worktree. */
  branch?: string;
}

/**
 * `stepwise/sessions`: a folder's sessions, whenever one is made, closed or reopened, or a worktree
 * session's changes were applied (the same list as `stepwise.sessions`; runs starting and ending are
 * `stepwise/status`, which names the session).
 */
export interface SessionsParams {
  workspace: string;
  sessions: SessionInfo[];
}

/** One skill: its name and description. */
export interface Skill {
  name: string;
  description: string;
}

/**
 * `stepwise.skills`: the folder's skills, as a run would find them now, for the editor's `/` completion (a
 * prompt `/<name> [text]` calls one).
 */
export interface Skills {
  skills: Skill[];
}

/** `stepwise/status`. */
export interface StatusParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  state: RunState;
  runId: string;
  /** Why the run ended (with `idle`). */
  reason?: FinishReason;
  message?: string;
  errorKind?: ErrorKind;
  /**
   * How many of the folder's background tasks run when this status is sent, left out when none does
   * (the live list: `stepwise/background`).
   */
  backgroundTasks?: number;
}

/** `stepwise.steer`. */
export interface SteerArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
  text: string;
}

/** `stepwise/subagent`: a child agent (`task`) started, went on (a round, a call) or ended. */
export interface SubagentParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  runId: string;
  /** The `task` call that made it. */
  toolCallId: string;
  /** `sa-<n>`. */
  id: string;
  description: string;
  /** The agent it runs as (`general`, `explore`, or one defined in a file). */
  agent: string;
  state: SubagentState;
  rounds: number;
  /** The tool of its latest call. */
  lastTool?: string;
  /** Its tokens so far (input and output), counted in the session's usage. */
  tokens: number;
}

/** Where a child is (`stepwise/subagent`'s `state`). */
export type SubagentState = 'running' | 'done' | 'failed' | 'cancelled';

/**
 * `stepwise/toolCall`: around every tool call. `step` is the plan step in progress when it ran (the
 * edits it makes carry the same step in their label).
 */
export interface ToolCallParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  runId: string;
  id: string;
  name: string;
  phase: Phase;
  summary: string;
  /** With `finished`: the result, shortened. */
  output?: string;
  isError?: boolean;
  step: string | null;
  /** A child's call (`task`): the child's id, `sa-<n>`. */
  subagent?: string;
}

export interface ToolEntry {
  id: string;
  name: string;
  summary: string;
  /** The result as the model read it (cut to `OUTPUT_CHARS`); empty while the call has no result. */
  output: string;
  isError: boolean;
  /** The plan step in progress when the call was made. */
  step: string | null;
}

/** `stepwise/usage`. */
export interface UsageParams {
  workspace: string;
  /** The session (`stepwise.newSession`'s id; `main`: the folder's own). */
  session: string;
  runId: string;
  /** The whole prompt, cached or not. */
  inputTokens: number;
  outputTokens: number;
  runInputTokens: number;
  runOutputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The latest prompt's size. */
  contextTokens: number;
  contextWindow: number;
}

/** Commands that take only the folder (without it: the only folder, or the first). */
export interface WorkspaceArgs {
  workspace?: string;
  /** The session (`stepwise.newSession`'s id); without it, the folder's own. */
  session?: string;
}

/** Notifications from the server: method to params. */
export interface Notifications {
  'stepwise/plan': PlanParams;
  'stepwise/reminder': ReminderParams;
  'stepwise/status': StatusParams;
  'stepwise/assistantText': AssistantTextParams;
  'stepwise/toolCall': ToolCallParams;
  'stepwise/usage': UsageParams;
  'stepwise/compacted': CompactedParams;
  'stepwise/checkpoint': CheckpointParams;
  'stepwise/mcp': McpParams;
  'stepwise/review': ReviewParams;
  'stepwise/background': BackgroundParams;
  'stepwise/diagnostics': DiagnosticsParams;
  'stepwise/sessions': SessionsParams;
  'stepwise/subagent': SubagentParams;
}

/** Requests from the server: method to params and result. */
export interface Requests {
  'stepwise/saveDocuments': { params: SaveDocumentsParams; result: SavedDocuments | null };
  'stepwise/ask': { params: AskParams; result: AskAnswer };
  'stepwise/query': { params: QueryParams; result: DiagnosticsAnswer | unknown };
}

/** `workspace/executeCommand` commands: name to argument and result. */
export interface Commands {
  'stepwise.run': { arguments: RunArgs; result: RunStarted };
  'stepwise.cancel': { arguments: WorkspaceArgs; result: null };
  'stepwise.reset': { arguments: WorkspaceArgs; result: null };
  'stepwise.plan': { arguments: WorkspaceArgs; result: PlanParams };
  'stepwise.compact': { arguments: WorkspaceArgs; result: null };
  'stepwise.editPlan': { arguments: EditPlanArgs; result: EditedPlan };
  'stepwise.steer': { arguments: SteerArgs; result: null };
  'stepwise.checkpoints': { arguments: WorkspaceArgs; result: CheckpointInfo[] };
  'stepwise.rewind': { arguments: RewindArgs; result: Rewound };
  'stepwise.conversation': { arguments: WorkspaceArgs; result: Conversation };
  'stepwise.changes': { arguments: ChangesArgs; result: Changes };
  'stepwise.review': { arguments: ReviewArgs; result: Reviewed };
  'stepwise.commentPlan': { arguments: CommentPlanArgs; result: RunStarted };
  'stepwise.approvePlan': { arguments: ApprovePlanArgs; result: RunStarted };
  'stepwise.killBackground': { arguments: KillBackgroundArgs; result: string };
  'stepwise.newSession': { arguments: NewSessionArgs; result: SessionMade };
  'stepwise.sessions': { arguments: WorkspaceArgs; result: SessionList };
  'stepwise.applySession': { arguments: SessionArgs; result: AppliedSession };
  'stepwise.closeSession': { arguments: CloseSessionArgs; result: null };
  'stepwise.skills': { arguments: WorkspaceArgs; result: Skills };
  'stepwise.image': { arguments: ImageArgs; result: ImageData };
  'stepwise.cancelSubagent': { arguments: CancelSubagentArgs; result: null };
}
