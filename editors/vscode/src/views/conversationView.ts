// The Conversation view (a webview view in the Stepwise container): one folder's sessions in a selector on top,
// the conversation of the session in view with its plan, an input that runs, steers and offers slash commands.
// This side keeps each session's conversation (conversation.ts), restored from `stepwise.conversation`, and
// sends the webview (src/webview) only what changed; the webview draws it and sends back what the user did.
import * as vscode from 'vscode';

import type { Connection } from '../connection/client';
import { EXTENSION_COMMANDS, PLAN_COMMANDS, REWIND_COMMANDS, SERVER_COMMANDS, SESSION_COMMANDS, steerArguments } from '../model/commands';
import { CHOICES, type Choice, type Question } from '../model/ask';
import { entriesOf, parseInput, type ConversationLog, type Entry, type Event } from '../model/conversation';
import { SessionLogs } from '../model/sessionLogs';
import { MAIN, sessionTabs } from '../model/sessions';
import { runImages, type ImageRef } from '../model/images';
import { Core, errorText, folderName, folderRefs, showError, workspaceFolderOf } from '../setup/core';
import type { Checkpoint } from '../model/checkpoints';
import { planActionCommand, planReady } from '../model/planFirstArgs';
import type { Setup } from '../setup/setup';
import { Approvals } from './approvals';
import { pageHtml } from './conversationPage';
import { BackgroundTasksPanel } from './backgroundTasks';
import * as completion from './completion';
import { fetchImage, openLink, pasted } from './viewRequests';

export const CONVERSATION_VIEW = 'stepwise.conversationView';

/** What the webview sends. */
type FromView =
  | { type: 'ready' }
  | { type: 'send'; text: string; images?: ImageRef[] }
  | { type: 'image'; id: string }
  | { type: 'stop' }
  | { type: 'approve'; id: number; answer: Choice }
  | { type: 'rewind'; index: number }
  | { type: 'files'; query: string }
  | { type: 'skills' }
  | { type: 'planItem'; id: string; edit: string }
  | { type: 'folder'; uri: string }
  | { type: 'open'; href: string }
  | { type: 'command'; id: string }
  | { type: 'planAction'; action: string; text?: string }
  | { type: 'session'; session: string }
  | { type: 'sessionAction'; action: string; session: string }
  | { type: 'killBackground' | 'dismissBackground'; id: string }
  | { type: 'cancelSubagent'; id: string };

const PLAN_EDITS: Record<string, string> = {
  edit: PLAN_COMMANDS.editText,
  addAfter: PLAN_COMMANDS.addAfter,
  delete: PLAN_COMMANDS.deleteItem,
  up: PLAN_COMMANDS.moveUp,
  down: PLAN_COMMANDS.moveDown,
  pending: PLAN_COMMANDS.markPending,
  in_progress: PLAN_COMMANDS.markInProgress,
  completed: PLAN_COMMANDS.markDone,
  rewind: REWIND_COMMANDS.rewindToItem,
};

/** Commands the view's buttons may run (nothing else a message names is executed). */
const VIEW_COMMANDS = new Set<string>(['stepwise.reviewChanges', REWIND_COMMANDS.showCheckpoints, PLAN_COMMANDS.editAsText, EXTENSION_COMMANDS.resetSession]);

/** The selector's actions on a session, each the command of its name (with the folder and the session). */
const SESSION_ACTIONS: Record<string, string> = {
  new: SESSION_COMMANDS.newSession,
  newWorktree: SESSION_COMMANDS.newSessionInWorktree,
  apply: SESSION_COMMANDS.applySession,
  close: SESSION_COMMANDS.closeSession,
  discard: SESSION_COMMANDS.discardSession,
};

export class ConversationView implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  /** The folder shown (its session in view: `core.folders.viewed`). */
  private folder: string | undefined;
  /** Each session's conversation, apart. */
  private readonly logs = new SessionLogs((ws, session) => this.read(ws, session));
  private readonly approvals: Approvals;
  private readonly background: BackgroundTasksPanel;
  private stateTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly core: Core,
    private readonly connection: Connection,
    private readonly setup: Setup,
  ) {
    core.disposables.push(
      vscode.window.registerWebviewViewProvider(CONVERSATION_VIEW, this),
      { dispose: () => this.stateTimer && clearTimeout(this.stateTimer) },
    );
    connection.events.conversationListeners.push((ws, session, e) => this.onEvent(ws, session, e));
    // The selector follows the server's list; another session in view is drawn whole.
    connection.events.sessionListeners.push((ws) => {
      this.logs.retain(ws, new Set([MAIN, ...this.core.folders.list(ws).map((s) => s.session)]));
      if (ws === this.folder) this.scheduleState();
    });
    core.viewListeners.push((ws) => ws === this.currentFolder() && void this.reset());
    this.approvals = new Approvals(core, connection, {
      shown: () => ({ visible: this.visible, folder: this.folder, viewed: this.core.folders.viewed(this.folder) }),
      add: (ws, session, e) => this.addTo(ws, session, e),
      changed: () => this.scheduleState(),
    });
    this.background = new BackgroundTasksPanel(core, connection, (m) => this.post(m), () => this.folder);
    // A new server (a restart): conversations are read again when next shown.
    connection.startListeners.push(() => {
      this.logs.clear();
      if (this.view?.visible) void this.reset();
    });
  }

  /** Whether approvals are answered in the view: it is open and showing. */
  get visible(): boolean {
    return !!this.view?.visible && this.ready;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.core.context.extensionUri, 'media');
    const dist = vscode.Uri.joinPath(this.core.context.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    view.webview.html = pageHtml(view.webview, media, dist);
    view.webview.onDidReceiveMessage((m: FromView) => void this.onMessage(m).catch(showError));
    // The view went away: the questions it was showing are asked the usual way.
    view.onDidChangeVisibility(() => {
      if (!view.visible) this.approvals.hidden();
    });
    view.onDidDispose(() => {
      if (this.view === view) this.view = undefined;
      this.ready = false;
      this.approvals.hidden();
    });
  }

  private post(message: unknown): void {
    if (this.view && this.ready) void this.view.webview.postMessage(message);
  }

  /** The folder the view shows: the one chosen, else a busy one, else the last the server spoke of. */
  private currentFolder(): string | undefined {
    const refs = folderRefs();
    if (this.folder && refs.some((f) => f.uri === this.folder)) return this.folder;
    const f = this.core.folders.firstBusy() ?? this.core.lastFolder ?? refs[0]?.uri;
    return refs.some((r) => r.uri === f) ? f : refs[0]?.uri;
  }

  /** A session's conversation as the server keeps it (none when it cannot be read: the error is logged). */
  private async read(workspace: string, session: string): Promise<Entry[]> {
    const client = await this.connection.ensureClient(false);
    if (!client) return [];
    try {
      return entriesOf(await this.core.execute(client, 'stepwise.conversation', [{ workspace, session }]));
    } catch (error) {
      this.core.log(`[stepwise] stepwise.conversation for ${workspace} (${session}) failed: ${errorText(error)}`);
      return [];
    }
  }

  /** Sends the webview everything about the folder shown and its session in view. */
  private async reset(): Promise<void> {
    const ws = this.currentFolder();
    this.folder = ws;
    const session = this.core.folders.viewed(ws);
    const log = ws ? await this.logs.log(ws, session) : undefined;
    if (ws !== this.currentFolder() || session !== this.core.folders.viewed(ws)) return;
    this.post({ type: 'reset', entries: log?.entries ?? [], ...this.state(ws), background: this.background.tasks(ws) });
  }

  private state(ws: string | undefined): Record<string, unknown> {
    const folders = this.core.folders;
    const f = folders.get(ws);
    const viewed = folders.viewed(ws);
    const sessions = sessionTabs(folders.list(ws), (s) => folders.get(ws, s), viewed, this.approvals.asking(ws), folders.all().filter((x) => x.uri === ws).map((x) => x.session));
    return {
      folder: ws ? { uri: ws, name: folderName(ws) } : undefined,
      folders: folderRefs(),
      // The selector: each session's title, state, progress; a worktree's unapplied files; a question waiting.
      sessions,
      plan: f?.plan,
      status: f?.status,
      usage: f?.usage,
      busy: folders.busy(ws),
      // Approve / Approve with Fresh Context / Comment under the plan until the run starts.
      planReady: planReady(f?.status),
    };
  }

  /** An event of a session: into its conversation (read already); drawn when the view shows that session. */
  private onEvent(workspace: string, session: string, e: Event | undefined): void {
    if (e?.type === 'ended') this.approvals.ended(workspace, session);
    const changed = e ? this.logs.apply(workspace, session, e) : [];
    if (changed === 'reload') {
      if (this.inView(workspace, session)) void this.reset();
      return;
    }
    if (this.inView(workspace, session)) for (const i of changed) this.post({ type: 'entry', index: i, entry: this.logs.known(workspace, session)?.entries[i] });
    // The selector shows every session's state: any of the folder's events may change it.
    if (workspace === this.folder || (!this.folder && this.view)) this.scheduleState();
  }

  /** Plan, state and usage go to the view at most every 50 ms. */
  private scheduleState(): void {
    if (this.stateTimer) return;
    this.stateTimer = setTimeout(() => {
      this.stateTimer = undefined;
      if (!this.folder) return void this.reset();
      this.post({ type: 'state', ...this.state(this.folder) });
    }, 50);
  }

  private async onMessage(m: FromView): Promise<void> {
    switch (m?.type) {
      case 'ready':
        this.ready = true;
        return this.reset();
      case 'send':
        return this.send(String(m.text ?? ''), pasted(m.images));
      case 'image':
        return this.image(String(m.id ?? ''));
      case 'stop':
        return this.stop();
      case 'approve':
        return this.approvals.answer(Number(m.id), CHOICES.find((c) => c.choice === m.answer)?.choice);
      case 'rewind':
        return this.rewind(Number(m.index));
      case 'files': {
        const query = String(m.query ?? '');
        return this.post({ type: 'files', query, items: await completion.files(this.folder, query) });
      }
      case 'skills':
        return this.post({ type: 'skills', items: await completion.skills(this.core, this.connection, this.folder) });
      case 'planItem': {
        const command = PLAN_EDITS[String(m.edit)];
        const ws = this.folder;
        if (!command || !ws) return;
        // The plan view's commands take its nodes: `id` is `<folder>#<item id>`.
        await vscode.commands.executeCommand(command, { kind: 'item', id: `${ws}#${m.id}`, workspace: ws, label: this.planText(ws, String(m.id)) });
        return;
      }
      case 'folder':
        if (folderRefs().some((f) => f.uri === m.uri)) {
          this.folder = m.uri;
          await this.reset();
        }
        return;
      case 'session':
        if (this.folder && typeof m.session === 'string' && m.session) this.core.showSession(this.folder, m.session);
        return;
      case 'sessionAction': {
        const command = SESSION_ACTIONS[String(m.action)];
        if (command && this.folder) await vscode.commands.executeCommand(command, this.folder, typeof m.session === 'string' ? m.session : undefined);
        return;
      }
      case 'open': {
        // A worktree session's paths are its worktree's.
        const ws = this.folder;
        const worktree = ws ? this.core.folders.list(ws).find((x) => x.session === this.core.folders.viewed(ws))?.worktree : undefined;
        return ws ? openLink(ws, String(m.href ?? ''), worktree) : undefined;
      }
      case 'command':
        if (VIEW_COMMANDS.has(String(m.id))) await vscode.commands.executeCommand(String(m.id));
        return;
      case 'killBackground':
        return this.background.kill(String(m.id ?? ''));
      case 'dismissBackground':
        return this.background.dismiss(String(m.id ?? ''));
      case 'cancelSubagent':
        return this.cancelSubagent(String(m.id ?? ''));
      case 'planAction': {
        // The same commands as the plan-ready message and the plan view's title (planFirst.ts).
        const run = planActionCommand(this.folder, m.action, m.text);
        if (run) await vscode.commands.executeCommand(run.command, ...run.args);
        // The buttons come back (enabled) or go, whatever the command did.
        this.scheduleState();
        return;
      }
    }
  }

  private planText(ws: string, id: string): string {
    return String(this.core.folders.plan(ws)?.items.find((i) => String(i.id) === id)?.text ?? '');
  }

  /** The input's line: a slash command, else a task (a steer while a run goes on), to the session in view, with
   * the images pasted. */
  private async send(raw: string, images: ImageRef[]): Promise<void> {
    const ws = this.currentFolder();
    const input = parseInput(raw) ?? (images.length > 0 ? { text: '' } : undefined);
    if (!ws || !input) return;
    if ('slash' in input) return this.slash(ws, input.slash, input.arg, images);
    const session = this.core.folders.viewed(ws);
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const log = await this.logs.log(ws, session);
    if (this.core.folders.busy(ws, session)) {
      const args = steerArguments(input.text, ws);
      if (!args) return;
      await this.core.execute(client, SERVER_COMMANDS.steer, [{ ...args[0], session }]);
      this.core.writer.line(`» you: ${args[0].text}`);
      this.add(ws, session, log, { type: 'user', kind: 'steer', text: args[0].text, runId: this.core.folders.get(ws, session)?.status?.runId });
      return;
    }
    await this.run(ws, session, log, input.text, undefined, images);
  }

  private async run(ws: string, session: string, log: ConversationLog, prompt: string, mode?: 'plan', images: ImageRef[] = []): Promise<void> {
    const folder = workspaceFolderOf(ws);
    if (!folder || !(await this.setup.readyToRun(folder))) return;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    this.core.folders.ensure(ws, session).prompt = prompt;
    const index = this.add(ws, session, log, { type: 'user', kind: 'user', text: prompt, images });
    const sent = runImages(images);
    const args = { prompt, workspace: ws, session, ...(mode ? { mode } : {}), ...(sent.length ? { images: sent } : {}) };
    const result = (await this.core.execute(client, SERVER_COMMANDS.run, [args])) as { runId?: string } | null;
    if (index !== undefined && result?.runId) {
      log.setRunId(index, result.runId);
      if (this.inView(ws, session)) this.post({ type: 'entry', index, entry: log.entries[index] });
    }
  }

  private inView(ws: string, session: string): boolean {
    return ws === this.folder && session === this.core.folders.viewed(ws);
  }

  private add(ws: string, session: string, log: ConversationLog, e: Event): number | undefined {
    const i = log.apply(e);
    if (i !== undefined && this.inView(ws, session)) this.post({ type: 'entry', index: i, entry: log.entries[i] });
    return i;
  }

  /** Adds to a session's conversation, read first if need be (an answer needs none: its question is there). */
  private async addTo(ws: string, session: string, e: Event): Promise<boolean> {
    const known = this.logs.known(ws, session);
    if (!known && e.type === 'answered') return false;
    const log = known ?? (await this.logs.log(ws, session));
    this.add(ws, session, log, e);
    this.scheduleState();
    return true;
  }

  private async slash(ws: string, name: string, arg: string, images: ImageRef[]): Promise<void> {
    switch (name) {
      case 'compact': {
        const client = await this.connection.ensureClient(true);
        if (client) await this.core.execute(client, 'stepwise.compact', [{ workspace: ws, session: this.core.folders.viewed(ws) }]);
        return;
      }
      case 'plan': {
        if (!arg) return void vscode.commands.executeCommand(PLAN_COMMANDS.editAsText);
        const session = this.core.folders.viewed(ws);
        return this.run(ws, session, await this.logs.log(ws, session), arg, 'plan', images);
      }
      case 'checkpoints':
      case 'rewind':
        return void vscode.commands.executeCommand(REWIND_COMMANDS.showCheckpoints);
      case 'review':
        return void vscode.commands.executeCommand('stepwise.reviewChanges');
    }
  }

  private async stop(): Promise<void> {
    const ws = this.folder;
    const client = this.connection.running();
    if (ws && client) await this.core.execute(client, SERVER_COMMANDS.cancel, [{ workspace: ws, session: this.core.folders.viewed(ws) }]);
  }

  /** Stop on a `task` card: that child alone ends (the run goes on); a child already ended is said so. */
  private async cancelSubagent(id: string): Promise<void> {
    const ws = this.folder;
    const client = this.connection.running();
    if (!ws || !client || !/^sa-\d+$/.test(id)) return;
    await this.core.execute(client, SERVER_COMMANDS.cancelSubagent, [{ workspace: ws, session: this.core.folders.viewed(ws), id }]);
  }

  /** "Rewind to here" on a turn: back to the checkpoint before that run's first round. */
  private async rewind(index: number): Promise<void> {
    const ws = this.folder;
    const session = this.core.folders.viewed(ws);
    const entry = ws ? this.logs.known(ws, session)?.entries[index] : undefined;
    if (!ws || !entry?.runId) {
      void vscode.window.showInformationMessage('stepwise: this turn has no checkpoint to go back to.');
      return;
    }
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const list = (await this.core.execute(client, SERVER_COMMANDS.checkpoints, [{ workspace: ws, session }])) as Checkpoint[] | null;
    const c = (Array.isArray(list) ? list : []).find((x) => String(x.runId) === entry.runId);
    if (!c) {
      void vscode.window.showInformationMessage('stepwise: that turn\u2019s checkpoint is gone (rewound past, or dropped to keep the store small).');
      return;
    }
    await vscode.commands.executeCommand(REWIND_COMMANDS.rewindToEntry, { workspace: ws, checkpoint: c.id });
    // The conversation went back too: read it again.
    this.logs.forget(ws, session);
    await this.reset();
  }

  /** An image of the conversation the view draws, known by id (stepwise.image): a data URL, or none when gone. */
  private async image(id: string): Promise<void> {
    const client = this.connection.running();
    const dataUrl = this.folder && client ? await fetchImage(this.core, client, this.folder, id) : undefined;
    this.post({ type: 'image', id, ...(dataUrl ? { dataUrl } : {}) });
  }

  /** A question of the server (`stepwise/ask`) about a tool call: in its session's card (approvals.ts), or
   * `undefined` when VS Code's notification asks. */
  ask(question: Question, token: vscode.CancellationToken): Promise<Choice | undefined> | undefined {
    return this.approvals.ask(question, token);
  }
}

