// The Conversation view (a webview view in the Stepwise container): one folder's conversation, its plan on
// top, an input that runs, steers and offers slash commands. This side keeps each folder's conversation
// (conversation.ts), restored from `stepwise.conversation`, and sends the webview (src/webview) only what
// changed; the webview draws it and sends back what the user did.
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';

import type { Connection } from '../connection/client';
import { EXTENSION_COMMANDS, PLAN_COMMANDS, REWIND_COMMANDS, SERVER_COMMANDS, steerArguments, workspaceArguments } from '../model/commands';
import { CHOICES, type Choice, type Question } from '../model/ask';
import { ConversationLog, entriesOf, hrefPlace, parseInput, type Approval, type Entry, type Event, type Outcome } from '../model/conversation';
import { runImages, type ImageRef } from '../model/images';
import { Core, errorText, folderName, folderRefs, showError, workspaceFolderOf } from '../setup/core';
import type { Checkpoint } from '../model/checkpoints';
import { planActionCommand, planReady } from '../model/planFirstArgs';
import type { Setup } from '../setup/setup';
import { BackgroundTasksPanel } from './backgroundTasks';
import { fetchImage, folderFiles, openLink, pasted } from './viewRequests';

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
  | { type: 'planItem'; id: string; edit: string }
  | { type: 'folder'; uri: string }
  | { type: 'open'; href: string }
  | { type: 'command'; id: string }
  | { type: 'planAction'; action: string; text?: string }
  | { type: 'killBackground' | 'dismissBackground'; id: string };

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
const VIEW_COMMANDS = new Set<string>(['stepwise.reviewChanges', REWIND_COMMANDS.showCheckpoints, PLAN_COMMANDS.editAsText, EXTENSION_COMMANDS.newSession]);

interface Pending {
  approval: Approval;
  workspace: string;
  resolve: (answer: Choice | undefined) => void;
}

export class ConversationView implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  /** The folder shown. */
  private folder: string | undefined;
  private readonly logs = new Map<string, ConversationLog>();
  /** Conversations being read, with the events that arrive meanwhile. */
  private readonly loading = new Map<string, { promise: Promise<ConversationLog>; buffer: Event[] }>();
  private readonly pending = new Map<number, Pending>();
  /** Folders whose conversation missed part of a run while it was read: read again when the run ends. */
  private readonly stale = new Set<string>();
  private nextApproval = 1;
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
    connection.events.conversationListeners.push((ws, e) => this.onEvent(ws, e));
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
    view.webview.html = this.html(view.webview, media, dist);
    view.webview.onDidReceiveMessage((m: FromView) => void this.onMessage(m).catch(showError));
    view.onDidChangeVisibility(() => {
      if (!view.visible) this.hidden();
    });
    view.onDidDispose(() => {
      if (this.view === view) this.view = undefined;
      this.ready = false;
      this.hidden();
    });
  }

  /** The view went away: questions it was showing are asked the usual way. */
  private hidden(): void {
    for (const p of this.pending.values()) void this.askInWindow(p);
  }

  private html(webview: vscode.Webview, media: vscode.Uri, dist: vscode.Uri): string {
    const nonce = crypto.randomBytes(18).toString('base64');
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
    ].join('; ');
    const css = webview.asWebviewUri(vscode.Uri.joinPath(media, 'conversation.css'));
    const js = webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js'));
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${css}">
<title>Conversation</title></head>
<body><div id="app"></div><script nonce="${nonce}" src="${js}"></script></body></html>`;
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

  /** The folder's conversation: kept here once read from the server. */
  private log(workspace: string): Promise<ConversationLog> {
    const known = this.logs.get(workspace);
    if (known) return Promise.resolve(known);
    let loading = this.loading.get(workspace);
    if (!loading) {
      const buffer: Event[] = [];
      loading = { buffer, promise: this.fetch(workspace, buffer).finally(() => this.loading.delete(workspace)) };
      this.loading.set(workspace, loading);
    }
    return loading.promise;
  }

  private async fetch(workspace: string, buffer: Event[]): Promise<ConversationLog> {
    const log = new ConversationLog();
    const client = await this.connection.ensureClient(false);
    if (client) {
      try {
        log.load(entriesOf(await this.core.execute(client, 'stepwise.conversation', workspaceArguments(workspace))));
      } catch (error) {
        this.core.log(`[stepwise] stepwise.conversation for ${workspace} failed: ${errorText(error)}`);
      }
    }
    // What arrived while it was read follows it, unless the server's answer has that run already (it may
    // have been read after those events): the run's end reads the conversation again, so nothing is lost.
    const known = new Set(log.entries.map((e) => e.runId).filter((r) => !!r));
    for (const e of buffer) {
      const runId = e.type === 'tool' ? e.call.runId : 'runId' in e ? e.runId : undefined;
      if (runId && known.has(runId)) {
        this.stale.add(workspace);
        continue;
      }
      if (e.type === 'ended') log.ended(e.runId);
      else log.apply(e);
    }
    this.logs.set(workspace, log);
    return log;
  }

  /** Sends the webview everything about the folder shown. */
  private async reset(): Promise<void> {
    const ws = this.currentFolder();
    this.folder = ws;
    const log = ws ? await this.log(ws) : undefined;
    if (ws !== this.currentFolder()) return;
    this.post({ type: 'reset', entries: log?.entries ?? [], ...this.state(ws), background: this.background.tasks(ws) });
  }

  private state(ws: string | undefined): Record<string, unknown> {
    const f = this.core.folders.get(ws);
    return {
      folder: ws ? { uri: ws, name: folderName(ws) } : undefined,
      folders: folderRefs(),
      plan: f?.plan,
      status: f?.status,
      usage: f?.usage,
      busy: this.core.folders.busy(ws),
      // Approve / Approve with Fresh Context / Comment under the plan until the run starts.
      planReady: planReady(f?.status),
    };
  }

  private onEvent(workspace: string, e: Event | undefined): void {
    if (e?.type === 'ended') for (const p of [...this.pending.values()]) if (p.workspace === workspace) this.answer(p.approval.id, undefined);
    const log = this.logs.get(workspace);
    // A conversation not read yet gets it all when it is read (the server keeps it).
    if (e && !log) this.loading.get(workspace)?.buffer.push(e);
    if (e?.type === 'ended' && log && this.stale.delete(workspace)) {
      this.logs.delete(workspace);
      if (workspace === this.folder) void this.reset();
      return;
    }
    if (e && log) {
      const applied = e.type === 'ended' ? log.ended(e.runId) : [log.apply(e)].filter((i): i is number => i !== undefined);
      // A round's diagnostics may change several cards.
      const changed = e.type === 'diagnostics' ? log.changedCards : applied;
      if (workspace === this.folder) for (const i of changed) this.post({ type: 'entry', index: i, entry: log.entries[i] });
    }
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
        await this.reset();
        for (const p of this.pending.values()) if (p.workspace === this.folder) this.post({ type: 'entry', ...this.findApproval(p) });
        return;
      case 'send':
        return this.send(String(m.text ?? ''), pasted(m.images));
      case 'image':
        return this.image(String(m.id ?? ''));
      case 'stop':
        return this.stop();
      case 'approve':
        return this.answer(Number(m.id), CHOICES.find((c) => c.choice === m.answer)?.choice);
      case 'rewind':
        return this.rewind(Number(m.index));
      case 'files':
        return this.files(String(m.query ?? ''));
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
      case 'open':
        return this.folder ? openLink(this.folder, String(m.href ?? '')) : undefined;
      case 'command':
        if (VIEW_COMMANDS.has(String(m.id))) await vscode.commands.executeCommand(String(m.id));
        return;
      case 'killBackground':
        return this.background.kill(String(m.id ?? ''));
      case 'dismissBackground':
        return this.background.dismiss(String(m.id ?? ''));
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

  /** The input's line: a slash command, else a task (a steer while a run goes on), with the images pasted. */
  private async send(raw: string, images: ImageRef[]): Promise<void> {
    const ws = this.currentFolder();
    const input = parseInput(raw) ?? (images.length > 0 ? { text: '' } : undefined);
    if (!ws || !input) return;
    if ('slash' in input) return this.slash(ws, input.slash, input.arg, images);
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const log = await this.log(ws);
    if (this.core.folders.busy(ws)) {
      const args = steerArguments(input.text, ws);
      if (!args) return;
      await this.core.execute(client, SERVER_COMMANDS.steer, args);
      this.core.writer.line(`» you: ${args[0].text}`);
      this.add(ws, log, { type: 'user', kind: 'steer', text: args[0].text, runId: this.core.folders.get(ws)?.status?.runId });
      return;
    }
    await this.run(ws, log, input.text, undefined, images);
  }

  private async run(ws: string, log: ConversationLog, prompt: string, mode?: 'plan', images: ImageRef[] = []): Promise<void> {
    const folder = workspaceFolderOf(ws);
    if (!folder || !(await this.setup.readyToRun(folder))) return;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    this.core.folders.ensure(ws).prompt = prompt;
    const index = this.add(ws, log, { type: 'user', kind: 'user', text: prompt, images });
    const sent = runImages(images);
    const args = { prompt, workspace: ws, ...(mode ? { mode } : {}), ...(sent.length ? { images: sent } : {}) };
    const result = (await this.core.execute(client, SERVER_COMMANDS.run, [args])) as { runId?: string } | null;
    if (index !== undefined && result?.runId) {
      log.setRunId(index, result.runId);
      if (ws === this.folder) this.post({ type: 'entry', index, entry: log.entries[index] });
    }
  }

  private add(ws: string, log: ConversationLog, e: Event): number | undefined {
    const i = log.apply(e);
    if (i !== undefined && ws === this.folder) this.post({ type: 'entry', index: i, entry: log.entries[i] });
    return i;
  }

  private async slash(ws: string, name: string, arg: string, images: ImageRef[]): Promise<void> {
    switch (name) {
      case 'compact': {
        const client = await this.connection.ensureClient(true);
        if (client) await this.core.execute(client, 'stepwise.compact', workspaceArguments(ws));
        return;
      }
      case 'plan':
        if (!arg) return void vscode.commands.executeCommand(PLAN_COMMANDS.editAsText);
        return this.run(ws, await this.log(ws), arg, 'plan', images);
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
    if (ws && client) await this.core.execute(client, SERVER_COMMANDS.cancel, workspaceArguments(ws));
  }

  /** "Rewind to here" on a turn: back to the checkpoint before that run's first round. */
  private async rewind(index: number): Promise<void> {
    const ws = this.folder;
    const entry = ws ? this.logs.get(ws)?.entries[index] : undefined;
    if (!ws || !entry?.runId) {
      void vscode.window.showInformationMessage('stepwise: this turn has no checkpoint to go back to.');
      return;
    }
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const list = (await this.core.execute(client, SERVER_COMMANDS.checkpoints, workspaceArguments(ws))) as Checkpoint[] | null;
    const c = (Array.isArray(list) ? list : []).find((x) => String(x.runId) === entry.runId);
    if (!c) {
      void vscode.window.showInformationMessage('stepwise: that turn\u2019s checkpoint is gone (rewound past, or dropped to keep the store small).');
      return;
    }
    await vscode.commands.executeCommand(REWIND_COMMANDS.rewindToEntry, { workspace: ws, checkpoint: c.id });
    // The conversation went back too: read it again.
    this.logs.delete(ws);
    await this.reset();
  }

  /** An image of the conversation the view draws, known by id (stepwise.image): a data URL, or none when gone. */
  private async image(id: string): Promise<void> {
    const client = this.connection.running();
    const dataUrl = this.folder && client ? await fetchImage(this.core, client, this.folder, id) : undefined;
    this.post({ type: 'image', id, ...(dataUrl ? { dataUrl } : {}) });
  }

  /** `@` in the input: the folder's files matching what follows it. */
  private async files(query: string): Promise<void> {
    const items = this.folder ? await folderFiles(this.folder, query) : [];
    this.post({ type: 'files', query, items });
  }

  // ---- approvals --------------------------------------------------------------------------------------

  /**
   * A question of the server (`stepwise/ask`) about a tool call: in the call's card while the view shows the
   * folder, else (or once the view is closed) as VS Code's notification. Withdrawn by the server (the run
   * was cancelled), it leaves the card.
   */
  ask(question: Question, token: vscode.CancellationToken): Promise<Choice | undefined> | undefined {
    const ws = question.workspace;
    if (!this.visible || !ws || ws !== this.folder) return undefined;
    const approval: Approval = { id: this.nextApproval++, question };
    return new Promise((resolve) => {
      const p: Pending = { approval, workspace: ws, resolve };
      this.pending.set(approval.id, p);
      token.onCancellationRequested(() => this.answer(approval.id, 'withdrawn'));
      const log = this.logs.get(ws);
      if (log) this.add(ws, log, { type: 'approval', approval });
      else void this.askInWindow(p);
    });
  }

  private findApproval(p: Pending): { index: number; entry: Entry } | Record<string, never> {
    const entries = this.logs.get(p.workspace)?.entries ?? [];
    const index = entries.findIndex((e) => e.approval?.id === p.approval.id);
    return index >= 0 ? { index, entry: entries[index] } : {};
  }

  /** Records what became of a question (no answer: `unanswered`) and gives the server the choice. */
  private answer(id: number, outcome: Outcome | undefined): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    const log = this.logs.get(p.workspace);
    if (log) this.add(p.workspace, log, { type: 'answered', id, answer: outcome ?? 'unanswered' });
    p.resolve(outcome === 'unanswered' || outcome === 'withdrawn' ? undefined : outcome);
  }

  private async askInWindow(p: Pending): Promise<void> {
    const answer = await this.connection.askInWindow(p.approval.question);
    if (this.pending.has(p.approval.id)) this.answer(p.approval.id, answer);
  }
}

