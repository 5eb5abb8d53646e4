// What every part of the extension shares: the folders' records, the output channels, the language client
// once started, and small helpers over the window's folders and settings.
import * as vscode from 'vscode';
import { ExecuteCommandRequest, type LanguageClient } from 'vscode-languageclient/node';

import type { Commands } from '../protocol/generated';
import { chooseFolder, executeCommandParams, withSession } from '../model/commands';
import { Folders } from '../model/folders';
import { MAIN, sessionLabel } from '../model/sessions';
import type { FolderRef } from '../model/plan';
import { SERVER_KEYS } from './settings';
import { TranscriptWriter } from '../model/transcript';

export const PLAN_VIEW = 'stepwise.planView';
/** Where the sessions in view are kept across reloads (the window's workspace state). */
const VIEWED_KEY = 'stepwise.viewedSessions';

export function folderRefs(): FolderRef[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => ({ uri: f.uri.toString(), name: f.name }));
}

export function workspaceFolderOf(uri: string): vscode.WorkspaceFolder | undefined {
  return (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.toString() === uri);
}

export function folderName(workspace: string): string {
  return workspaceFolderOf(workspace)?.name ?? folderRefs().find((f) => f.uri === workspace)?.name ?? workspace;
}

export function readSettings(scope?: vscode.ConfigurationScope): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration('stepwise', scope);
  const out: Record<string, unknown> = {};
  for (const key of [...SERVER_KEYS, 'serverPath']) out[key] = cfg.get(key);
  return out;
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Shows a failed command's error. */
export function showError(error: unknown): void {
  void vscode.window.showErrorMessage(`stepwise: ${errorText(error)}`);
}

/** The folder a command goes to: the active editor's, the only one, or the user's pick among `candidates`. */
export async function pickFolder(candidates?: FolderRef[], placeHolder = 'Which folder?'): Promise<FolderRef | undefined> {
  const folders = folderRefs();
  const choice = chooseFolder(folders, vscode.window.activeTextEditor?.document.uri.toString(), candidates);
  if (choice.kind === 'folder') return choice.folder;
  if (choice.kind === 'none') {
    void vscode.window.showWarningMessage('stepwise: open a folder first; the agent works in a workspace folder.');
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    choice.candidates.map((f) => ({ label: f.name, description: workspaceFolderOf(f.uri)?.uri.fsPath, folder: f })),
    { placeHolder },
  );
  return pick?.folder;
}

/** What is redrawn after a change of state (the plan view and the status bar): views/ui.ts is one. Lower layers
 * (the connection, its notifications, set-up) name only this, so imports go one way: views on top of them. */
export interface Display {
  update(): void;
  updateStatusBar(): void;
  readonly view: { readonly visible: boolean };
}

export class Core {
  readonly folders = new Folders();
  readonly transcript = vscode.window.createOutputChannel('Stepwise');
  readonly serverLog = vscode.window.createOutputChannel('Stepwise Server');
  readonly writer = new TranscriptWriter(this.transcript);
  readonly disposables: vscode.Disposable[] = [this.transcript, this.serverLog];

  /** The running client, once started. */
  client: LanguageClient | undefined;
  starting: Promise<LanguageClient | undefined> | undefined;
  /** Why the server is missing or failed to start, shown in the status bar. */
  serverProblem: string | undefined;
  /** The folder the server last spoke of. */
  lastFolder: string | undefined;
  /** Called with the folder whose session in view changed (every view then shows that session). */
  readonly viewListeners: ((workspace: string) => void)[] = [];

  constructor(readonly context: vscode.ExtensionContext) {
    // The sessions in view before a reload (the server keeps the sessions; `stepwise.sessions` says which are left).
    const viewed = context.workspaceState.get<Record<string, string>>(VIEWED_KEY) ?? {};
    for (const [uri, session] of Object.entries(viewed)) if (typeof session === 'string' && session) this.folders.setViewed(uri, session);
  }

  /** Runs one of the server's commands: its argument and result typed as the server's schema says
   * (`protocol/generated.ts`). The result is `null` from a server that answers nothing. A command about a
   * conversation that names no session goes to the session in view of its folder. */
  execute<C extends keyof Commands>(client: LanguageClient, command: C, args: [Commands[C]['arguments']]): Promise<Commands[C]['result'] | null> {
    const sent = withSession(command, args, (ws) => this.folders.viewed(ws));
    return client.sendRequest(ExecuteCommandRequest.type, executeCommandParams(command, sent));
  }

  /** Puts a folder's session in view (kept across reloads) and tells the views. */
  showSession(workspace: string, session: string): void {
    if (!this.folders.setViewed(workspace, session)) return;
    this.sessionInViewChanged(workspace);
  }

  /** The session in view changed (also when the server's list no longer has it): kept, and said to the views. */
  sessionInViewChanged(workspace: string): void {
    const viewed = { ...(this.context.workspaceState.get<Record<string, string>>(VIEWED_KEY) ?? {}) };
    const session = this.folders.viewed(workspace);
    if (session === MAIN) delete viewed[workspace];
    else viewed[workspace] = session;
    void this.context.workspaceState.update(VIEWED_KEY, viewed);
    for (const listener of this.viewListeners) listener(workspace);
  }

  /** A session as notifications and the transcript name it: its title, with its folder when the window has several. */
  sessionName(workspace: string, session: string): string {
    return sessionLabel(this.folders.sessionTitle(workspace, session), folderRefs().length > 1 ? folderName(workspace) : undefined);
  }

  log(line: string): void {
    this.serverLog.appendLine(line);
  }
}
