// Sessions side by side (docs/protocol.md "Sessions side by side"): New Session (also in a worktree of its own),
// Switch Session, Apply Session (a worktree session's changes brought into the folder, then reviewed), Close
// Session and Discard Session (asking first when a worktree holds changes not applied). The Conversation view's
// selector runs the same commands with its folder and session; the palette and the view's title bar with none
// (the folder as for any command, its session in view). A worktree session's files are saved as the agent's
// edits reach them: the server sends those edits to the editor like any other, and nothing of a worktree the
// user does not look at should live only in an unsaved buffer (its count of files not applied, and Apply, read
// the worktree on disk).
import * as path from 'node:path';
import * as vscode from 'vscode';

import type { Connection } from '../connection/client';
import { SERVER_COMMANDS, SESSION_COMMANDS } from '../model/commands';
import { MAIN, appliedMessage, discardQuestion, sessionTabs } from '../model/sessions';
import { Core, errorText, folderName, folderRefs, pickFolder, showError } from '../setup/core';
import type { Review } from './review';

const CONVERSATION_FOCUS = 'stepwise.conversationView.focus';

export class Sessions {
  /** Worktree documents changed are saved together a moment later. */
  private saveTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly core: Core,
    private readonly connection: Connection,
    private readonly review: Review,
  ) {
    const cmd = (id: string, fn: (...args: any[]) => unknown) => core.disposables.push(vscode.commands.registerCommand(id, fn));
    const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
    cmd(SESSION_COMMANDS.newSession, (ws?: unknown) => this.make(str(ws), false));
    cmd(SESSION_COMMANDS.newSessionInWorktree, (ws?: unknown) => this.make(str(ws), true));
    cmd(SESSION_COMMANDS.showSession, (ws?: unknown, session?: unknown) => this.show(str(ws), str(session)));
    cmd(SESSION_COMMANDS.switchSession, () => this.pick());
    cmd(SESSION_COMMANDS.applySession, (ws?: unknown, session?: unknown) => this.apply(str(ws), str(session)));
    cmd(SESSION_COMMANDS.closeSession, (ws?: unknown, session?: unknown) => this.close(str(ws), str(session), false));
    cmd(SESSION_COMMANDS.discardSession, (ws?: unknown, session?: unknown) => this.close(str(ws), str(session), true));
    core.disposables.push(
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (!e.document.isDirty || !this.worktreeOf(e.document)) return;
        clearTimeout(this.saveTimer);
        this.saveTimer = setTimeout(() => void this.saveWorktrees(), 100);
      }),
      { dispose: () => clearTimeout(this.saveTimer) },
    );
  }

  /** The folder and session whose worktree holds a document, if any. */
  private worktreeOf(doc: vscode.TextDocument): { ws: string; session: string } | undefined {
    if (doc.uri.scheme !== 'file') return undefined;
    const inside = (dir: string) => {
      const rel = path.relative(dir, doc.uri.fsPath);
      return !!rel && !rel.startsWith('..') && !path.isAbsolute(rel);
    };
    for (const f of folderRefs()) {
      const s = this.core.folders.list(f.uri).find((x) => x.worktree && inside(x.worktree));
      if (s) return { ws: f.uri, session: s.session };
    }
    return undefined;
  }

  /** Saves the worktrees' unsaved documents (of one session, or all); the folders' lists then count their files
   * not applied again. */
  private async saveWorktrees(only?: string): Promise<void> {
    const folders = new Set<string>();
    for (const doc of vscode.workspace.textDocuments) {
      const at = doc.isDirty ? this.worktreeOf(doc) : undefined;
      if (!at || (only && at.session !== only)) continue;
      if (!(await doc.save().then((ok) => ok, () => false))) this.core.log(`[stepwise] could not save ${doc.uri.fsPath} in the worktree of ${at.session}`);
      folders.add(at.ws);
    }
    for (const ws of folders) await this.connection.fetchSessions(ws);
  }

  /** The folder a command is about (given, else as for any command) and its session (given, else the one in view). */
  private async target(ws: string | undefined, session: string | undefined, placeHolder: string): Promise<{ ws: string; session: string } | undefined> {
    const folder = ws && folderRefs().some((f) => f.uri === ws) ? ws : (await pickFolder(undefined, placeHolder))?.uri;
    return folder ? { ws: folder, session: session ?? this.core.folders.viewed(folder) } : undefined;
  }

  /** New Session (in a worktree of its own with `worktree`): made by the server, then in view. */
  private async make(ws: string | undefined, worktree: boolean): Promise<void> {
    const folder = (await this.target(ws, undefined, 'A new session in which folder?'))?.ws;
    if (!folder) return;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const args = [{ workspace: folder, ...(worktree ? { worktree: true } : {}) }] as const;
    let made;
    try {
      made = worktree
        ? await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `stepwise: making a worktree of ${folderName(folder)}…` }, () =>
            this.core.execute(client, SERVER_COMMANDS.newSession, [...args]),
          )
        : await this.core.execute(client, SERVER_COMMANDS.newSession, [...args]);
    } catch (error) {
      return showError(error);
    }
    if (!made?.session) return;
    this.core.folders.ensure(folder, made.session);
    // Its title is in the server's list (`stepwise/sessions` follows too).
    await this.connection.fetchSessions(folder, client);
    this.core.showSession(folder, made.session);
    const where = made.worktree ? ` in the worktree ${made.worktree}${made.branch ? ` (branch ${made.branch})` : ''}` : '';
    this.core.writer.line(`━━ new session ${this.core.sessionName(folder, made.session)} in ${folderName(folder)}${where}`);
    await vscode.commands.executeCommand(CONVERSATION_FOCUS);
  }

  /** Puts a session in view (a closed one opens again: the server reopens it for its conversation). */
  private async show(ws: string | undefined, session: string | undefined): Promise<void> {
    if (!ws || !session || !folderRefs().some((f) => f.uri === ws)) return;
    this.core.showSession(ws, session);
    await vscode.commands.executeCommand(CONVERSATION_FOCUS);
  }

  /** Switch Session: the folder's sessions to pick from, with their state. */
  private async pick(): Promise<void> {
    const folder = await pickFolder(undefined, 'The sessions of which folder?');
    if (!folder) return;
    await this.connection.fetchSessions(folder.uri);
    const folders = this.core.folders;
    const tabs = sessionTabs(folders.list(folder.uri), (s) => folders.get(folder.uri, s), folders.viewed(folder.uri), new Set());
    const pick = await vscode.window.showQuickPick(
      tabs.map((t) => ({
        label: `${t.viewed ? '$(eye) ' : ''}${t.title}`,
        description: [t.state, t.progress, t.worktree ? `worktree${t.unapplied ? `, ${t.unapplied} not applied` : ''}` : undefined].filter((x) => !!x).join(' · '),
        session: t.session,
      })),
      { title: `Stepwise: Sessions of ${folder.name}`, placeHolder: 'Show which session?' },
    );
    if (pick) await this.show(folder.uri, pick.session);
  }

  /** Apply Session: a worktree session's changes into the folder (open documents as edits, undoable), then the
   * review of that run and what was left alone. */
  private async apply(ws: string | undefined, session: string | undefined): Promise<void> {
    const t = await this.target(ws, session, 'Apply a session of which folder?');
    if (!t) return;
    const title = this.core.folders.sessionTitle(t.ws, t.session);
    if (!this.core.folders.list(t.ws).find((s) => s.session === t.session)?.worktree) {
      void vscode.window.showInformationMessage(`stepwise: ${title} works in the folder itself, its changes are there already; Apply Session is for a session in a worktree of its own.`);
      return;
    }
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    // What the agent wrote there and the editor holds unsaved goes with it.
    await this.saveWorktrees(t.session);
    let result;
    try {
      result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `stepwise: applying ${title}…` }, () =>
        this.core.execute(client, SERVER_COMMANDS.applySession, [{ session: t.session }]),
      );
    } catch (error) {
      void vscode.window.showErrorMessage(`stepwise: ${title} was not applied: ${errorText(error)}`);
      return;
    }
    const said = appliedMessage(result, title, folderName(t.ws));
    this.core.writer.line(`⇲ ${said.text.replace(/^stepwise: /, '')}`);
    // The applied files are a run of the folder's own session: reviewed hunk by hunk, undone by Undo.
    if ((result?.applied?.length ?? 0) > 0 && result?.runId) await this.review.showRun(t.ws, MAIN, result.runId);
    if (said.warning) void vscode.window.showWarningMessage(said.text);
    else void vscode.window.showInformationMessage(said.text);
  }

  /** Close Session keeps it (and its worktree) to reopen; Discard Session forgets it and removes its worktree,
   * asking first when the worktree holds changes not applied. The folder's own session stays. */
  private async close(ws: string | undefined, session: string | undefined, discard: boolean): Promise<void> {
    const t = await this.target(ws, session, `${discard ? 'Discard' : 'Close'} a session of which folder?`);
    if (!t) return;
    if (t.session === MAIN) {
      void vscode.window.showInformationMessage("stepwise: the folder's own session stays; Reset Session starts it anew.");
      return;
    }
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const title = this.core.folders.sessionTitle(t.ws, t.session);
    if (discard) {
      // What the worktree holds now, not what the list said when it came.
      await this.connection.fetchSessions(t.ws, client);
      const q = discardQuestion(this.core.folders.list(t.ws).find((s) => s.session === t.session), title);
      if (q && (await vscode.window.showWarningMessage(q.message, { modal: true, detail: q.detail }, 'Discard')) !== 'Discard') return;
    }
    try {
      await this.core.execute(client, SERVER_COMMANDS.closeSession, [{ session: t.session, ...(discard ? { discard: true } : {}) }]);
    } catch (error) {
      return showError(error);
    }
    this.core.writer.line(`━━ ${title} ${discard ? 'discarded' : 'closed'}`);
    if (this.core.folders.viewed(t.ws) === t.session) this.core.showSession(t.ws, MAIN);
    await this.connection.fetchSessions(t.ws, client);
  }
}
