// Which folder a command goes to, and the arguments of the server's commands. Pure logic: no `vscode` import.
import type { FolderRef } from './plan';

export const SERVER_COMMANDS = {
  run: 'stepwise.run',
  cancel: 'stepwise.cancel',
  reset: 'stepwise.reset',
  plan: 'stepwise.plan',
  editPlan: 'stepwise.editPlan',
  steer: 'stepwise.steer',
  checkpoints: 'stepwise.checkpoints',
  rewind: 'stepwise.rewind',
  killBackground: 'stepwise.killBackground',
  newSession: 'stepwise.newSession',
  sessions: 'stepwise.sessions',
  applySession: 'stepwise.applySession',
  closeSession: 'stepwise.closeSession',
  skills: 'stepwise.skills',
  cancelSubagent: 'stepwise.cancelSubagent',
} as const;

/**
 * The server's commands about one session's conversation (every one but those about the sessions themselves):
 * without `session`, the extension sends them to the session in view of their folder (docs/protocol.md
 * "Sessions side by side").
 */
const SESSION_SCOPED = new Set<string>([
  'stepwise.run',
  'stepwise.cancel',
  'stepwise.reset',
  'stepwise.plan',
  'stepwise.compact',
  'stepwise.editPlan',
  'stepwise.steer',
  'stepwise.checkpoints',
  'stepwise.rewind',
  'stepwise.conversation',
  'stepwise.changes',
  'stepwise.review',
  'stepwise.commentPlan',
  'stepwise.approvePlan',
  'stepwise.killBackground',
  'stepwise.cancelSubagent',
  // An image of the conversation (issue 49's images in prompts).
  'stepwise.image',
]);

/** A command's arguments with the session in view of their folder (`viewed`) where they name a folder and no
 * session; other commands' arguments, and those naming their session, are left as they are. */
export function withSession(command: string, args: unknown[], viewed: (workspace: string) => string): unknown[] {
  const first = args[0] as Record<string, unknown> | undefined;
  if (!SESSION_SCOPED.has(command) || !first || typeof first !== 'object' || typeof first.workspace !== 'string' || 'session' in first) return args;
  return [{ ...first, session: viewed(first.workspace) }, ...args.slice(1)];
}

/** The extension's own commands (the server's command ids are registered by the language client). */
export const EXTENSION_COMMANDS = {
  runTask: 'stepwise.runTask',
  cancelRun: 'stepwise.cancelRun',
  resetSession: 'stepwise.resetSession',
  showPlan: 'stepwise.showPlan',
  setApiKey: 'stepwise.setApiKey',
  showTranscript: 'stepwise.showTranscript',
  showServerLog: 'stepwise.showServerLog',
  checkSetup: 'stepwise.checkSetup',
  steerRun: 'stepwise.steerRun',
} as const;

/** The sessions side by side. The first three share their ids with the server's commands: the extension's own
 * are the ones VS Code runs (the language client leaves these ids to it, connection/client.ts). */
export const SESSION_COMMANDS = {
  newSession: 'stepwise.newSession',
  applySession: 'stepwise.applySession',
  closeSession: 'stepwise.closeSession',
  newSessionInWorktree: 'stepwise.newSessionInWorktree',
  discardSession: 'stepwise.discardSession',
  showSession: 'stepwise.showSession',
  switchSession: 'stepwise.switchSession',
} as const;

/** Server commands the extension registers under the same id (the language client must not register them). */
export const OWN_SERVER_COMMANDS: readonly string[] = [SESSION_COMMANDS.newSession, SESSION_COMMANDS.applySession, SESSION_COMMANDS.closeSession];

/** The plan editing commands (plan view items, the plan document). */
export const PLAN_COMMANDS = {
  editText: 'stepwise.planItem.edit',
  addAfter: 'stepwise.planItem.addAfter',
  deleteItem: 'stepwise.planItem.delete',
  moveUp: 'stepwise.planItem.moveUp',
  moveDown: 'stepwise.planItem.moveDown',
  markPending: 'stepwise.planItem.markPending',
  markInProgress: 'stepwise.planItem.markInProgress',
  markDone: 'stepwise.planItem.markDone',
  editAsText: 'stepwise.editPlanText',
} as const;

/** Checkpoints and rewind. */
export const REWIND_COMMANDS = {
  showCheckpoints: 'stepwise.showCheckpoints',
  rewindToItem: 'stepwise.planItem.rewind',
  rewindToEntry: 'stepwise.transcript.rewind',
} as const;

function withSlash(uri: string): string {
  return uri.endsWith('/') ? uri : uri + '/';
}

/** The folder that holds a document (the innermost one when folders nest). */
export function folderForUri(folders: FolderRef[], uri: string | undefined): FolderRef | undefined {
  if (!uri) return undefined;
  let best: FolderRef | undefined;
  for (const f of folders) {
    if (uri === f.uri || uri.startsWith(withSlash(f.uri))) {
      if (!best || f.uri.length > best.uri.length) best = f;
    }
  }
  return best;
}

export type FolderChoice = { kind: 'folder'; folder: FolderRef } | { kind: 'ask'; candidates: FolderRef[] } | { kind: 'none' };

/**
 * The folder a command runs in: the active editor's folder; else the only folder; else ask.
 * `candidates` narrows the choice (e.g. the folders with a run going on, for Cancel).
 */
export function chooseFolder(folders: FolderRef[], activeUri: string | undefined, candidates?: FolderRef[]): FolderChoice {
  const pool = candidates ?? folders;
  if (pool.length === 0) return { kind: 'none' };
  const active = folderForUri(folders, activeUri);
  if (active && pool.some((f) => f.uri === active.uri)) return { kind: 'folder', folder: active };
  if (pool.length === 1) return { kind: 'folder', folder: pool[0] };
  return { kind: 'ask', candidates: pool };
}

/** Arguments of `stepwise.run`, or undefined for an empty prompt. */
export function runArguments(prompt: string | undefined, workspace: string | undefined): [{ prompt: string; workspace?: string }] | undefined {
  const p = (prompt ?? '').trim();
  if (!p) return undefined;
  return [workspace ? { prompt: p, workspace } : { prompt: p }];
}

/** Arguments of `stepwise.steer`, or undefined for an empty line. */
export function steerArguments(text: string | undefined, workspace: string | undefined): [{ text: string; workspace?: string }] | undefined {
  const t = (text ?? '').trim();
  if (!t) return undefined;
  return [workspace ? { text: t, workspace } : { text: t }];
}

/** Arguments of `stepwise.cancel`, `stepwise.reset`, `stepwise.plan`. */
export function workspaceArguments(workspace: string | undefined): [{ workspace?: string }] {
  return [workspace ? { workspace } : {}];
}

/** Params of `workspace/executeCommand`. */
export function executeCommandParams(command: string, args: unknown[]): { command: string; arguments: unknown[] } {
  return { command, arguments: args };
}

/** Validates the input box of "Run Task": a message, or undefined when fine. */
export function validatePrompt(value: string): string | undefined {
  return value.trim() ? undefined : 'Describe the task for the agent';
}

/** Validates the input box of "Steer": a message, or undefined when fine. */
export function validateSteer(value: string): string | undefined {
  return value.trim() ? undefined : 'Tell the agent what to do differently';
}

/** Validates the input box of "Set API Key". Empty means "remove the stored key". */
export function validateApiKey(value: string): string | undefined {
  if (/\s/.test(value.trim())) return 'An API key has no spaces';
  return undefined;
}

/** The code lens command of the server (`stepwise.plan`) is shown as the plan view instead. */
export function mapLensCommand(command: string | undefined): string | undefined {
  return command === SERVER_COMMANDS.plan ? EXTENSION_COMMANDS.showPlan : command;
}
