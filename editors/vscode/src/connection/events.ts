// The server's notifications: each updates its session's record (every notification names its folder and
// session), the transcript and what the window shows.
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';

import { onNotification } from '../protocol/notifications';
import type { Event as ConversationEvent } from '../model/conversation';
import { endLine, tasksOf } from '../model/background';
import { failedServers, failureLine, mcpServers } from '../model/mcp';
import type { PlanParams } from '../model/plan';
import type { RoundLog } from '../model/rounds';
import { compactedLine, isSetupError, type StatusParams } from '../model/status';
import { MAIN, sessionKey, sessionOf, sessionsOf } from '../model/sessions';
import { planChangeLine, reminderLine, runEndLine, runStartLine, subagentEndLine, toolCallLines, usageLine } from '../model/transcript';
import { Core, folderName, type Display } from '../setup/core';
import type { Setup } from '../setup/setup';

export class Events {
  /** The folder and session the transcript's last lines are about. */
  private lastTranscript: string | undefined;
  /** The prompt last given to the Conversation view, per session. */
  private readonly promptShown = new Map<string, string>();
  /** Called with the folder and session whose plan changed. */
  readonly planListeners: ((workspace: string, session: string) => void)[] = [];
  /** Called with the folder and session whose runs and rounds changed (the Transcript view), and whether a run ended. */
  readonly roundListeners: ((workspace: string, session: string, ended: boolean) => void)[] = [];
  /** Called with the folder, the session and what to add to its conversation (the Conversation view);
   * `undefined` when only its plan, run state or usage changed. */
  readonly conversationListeners: ((workspace: string, session: string, e: ConversationEvent | undefined) => void)[] = [];
  /** Called with the folder and session whose background tasks changed (started, printed, ended, left the list). */
  readonly backgroundListeners: ((workspace: string, session: string) => void)[] = [];
  /** Called with the folder whose list of sessions changed. */
  readonly sessionListeners: ((workspace: string) => void)[] = [];

  constructor(
    private readonly core: Core,
    private readonly ui: Display,
    private readonly setup: Setup,
    /** Asks VS Code to fetch the code lenses again. */
    private readonly refreshLenses: () => void,
    /** Asks the server for a folder's sessions again (`stepwise.sessions`). */
    private readonly refreshSessions: (workspace: string) => void,
  ) {}

  /** Registers a handler for every notification of `client`. */
  listen(client: LanguageClient): void {
    const { writer } = this.core;
    onNotification(client, 'stepwise/plan', (p) => this.onPlan(p));
    onNotification(client, 'stepwise/status', (p) => this.onStatus(p));
    onNotification(client, 'stepwise/sessions', (p) => this.onSessions(p?.workspace, p));
    onNotification(client, 'stepwise/assistantText', (p) => {
      this.transcriptFolder(p.workspace, sessionOf(p));
      writer.text(p.text ?? '');
      this.rounds(p?.workspace, sessionOf(p), (log) => log.text(p));
      this.conversation(p?.workspace, sessionOf(p), { type: 'text', runId: p.runId, text: p.text ?? '' });
    });
    onNotification(client, 'stepwise/toolCall', (p) => {
      this.transcriptFolder(p.workspace, sessionOf(p));
      writer.lines(toolCallLines(p));
      this.rounds(p?.workspace, sessionOf(p), (log) => log.toolCall(p));
      this.conversation(p?.workspace, sessionOf(p), { type: 'tool', call: p });
    });
    // A `task` call's child: its state on that call's card (its calls come as `stepwise/toolCall` with `subagent`).
    onNotification(client, 'stepwise/subagent', (p) => {
      if (!p?.workspace) return;
      const line = subagentEndLine(p);
      if (line) {
        this.transcriptFolder(p.workspace, sessionOf(p));
        writer.line(line);
      }
      this.conversation(p.workspace, sessionOf(p), { type: 'subagent', runId: p.runId, child: p });
    });
    // What the model was told of its edits' errors after a round: under that round's cards.
    onNotification(client, 'stepwise/diagnostics', (p) => {
      if (!p?.workspace || !Array.isArray(p.lines)) return;
      this.transcriptFolder(p.workspace, sessionOf(p));
      writer.lines(p.lines.map((l) => `  ⚠ ${l.text}`));
      this.conversation(p.workspace, sessionOf(p), { type: 'diagnostics', runId: p.runId, calls: p.calls ?? [], lines: p.lines });
    });
    onNotification(client, 'stepwise/reminder', (p) => {
      this.transcriptFolder(p.workspace, sessionOf(p));
      writer.line(reminderLine(p.text ?? ''));
      this.conversation(p?.workspace, sessionOf(p), { type: 'note', kind: 'reminder', text: p.text ?? '' });
    });
    onNotification(client, 'stepwise/compacted', (p) => {
      if (!p?.workspace) return;
      this.core.folders.ensure(p.workspace, sessionOf(p)).compaction = p;
      this.transcriptFolder(p.workspace, sessionOf(p));
      writer.line(compactedLine(p));
      this.conversation(p.workspace, sessionOf(p), { type: 'note', kind: 'note', text: compactedLine(p), runId: p.runId });
      this.ui.updateStatusBar();
    });
    // A checkpoint begins a round of the Transcript view; its files are asked for when the run ends.
    onNotification(client, 'stepwise/checkpoint', (p) => this.rounds(p?.workspace, sessionOf(p), (log) => log.checkpoint(p)));
    onNotification(client, 'stepwise/mcp', (p) => {
      if (!p?.workspace) return;
      const f = this.core.folders.ensure(p.workspace, sessionOf(p));
      f.mcp = mcpServers(p);
      const failed = failedServers(f.mcp);
      if (failed.length > 0) this.transcriptFolder(p.workspace, f.session);
      for (const s of failed) writer.line(`⚠ ${failureLine(s)}`);
      this.ui.update();
    });
    // The folder's background tasks: the Conversation view lists them; an end is a transcript line (also
    // after the run ended: the model is not started for it).
    onNotification(client, 'stepwise/background', (p) => {
      if (!p?.workspace) return;
      const ended = this.core.folders.ensure(p.workspace, sessionOf(p)).background.update(tasksOf(p));
      if (ended.length > 0) this.transcriptFolder(p.workspace, sessionOf(p));
      for (const t of ended) writer.line(endLine(t));
      this.background(p.workspace, sessionOf(p));
      // The status bar counts the running tasks: a task's end between runs sends no `stepwise/status`.
      this.ui.updateStatusBar();
    });
    onNotification(client, 'stepwise/usage', (p) => {
      if (!p?.workspace) return;
      this.core.folders.ensure(p.workspace, sessionOf(p)).usage = p;
      this.transcriptFolder(p.workspace, sessionOf(p));
      writer.line(usageLine(p));
      this.conversation(p.workspace, sessionOf(p), undefined);
      this.ui.updateStatusBar();
    });
  }

  onPlan(p: PlanParams): void {
    const session = sessionOf(p);
    const before = this.core.folders.get(p?.workspace, session)?.plan?.revision;
    if (!this.core.folders.updatePlan(p)) return;
    this.core.lastFolder = p.workspace;
    const line = p.revision !== before ? planChangeLine(p) : undefined;
    if (line) {
      this.transcriptFolder(p.workspace, session);
      this.core.writer.line(line);
      this.conversation(p.workspace, session, { type: 'note', kind: 'planEdit', text: line });
    }
    this.conversation(p.workspace, session, undefined);
    this.ui.update();
    this.refreshLenses();
    for (const listener of this.planListeners) listener(p.workspace, session);
  }

  /** A folder's sessions (`stepwise/sessions`, or `stepwise.sessions` answered): one the server no longer has
   * leaves the view. */
  onSessions(workspace: string | undefined, raw: unknown): void {
    if (typeof workspace !== 'string' || !workspace) return;
    if (this.core.folders.setList(workspace, sessionsOf(raw))) this.core.sessionInViewChanged(workspace);
    for (const listener of this.sessionListeners) listener(workspace);
    this.ui.update();
  }

  private onStatus(p: StatusParams): void {
    if (!p?.workspace) return;
    const session = sessionOf(p);
    const f = this.core.folders.ensure(p.workspace, session);
    const prev = f.status;
    f.status = p;
    this.core.lastFolder = p.workspace;
    const { writer } = this.core;
    const started = p.state === 'running' && (!prev || prev.state === 'idle' || prev.runId !== p.runId);
    if (started) {
      f.usage = undefined;
      if (f.background.runStarted()) this.background(p.workspace, session);
      this.lastTranscript = sessionKey(p.workspace, session);
      writer.line('');
      writer.line(runStartLine(f.prompt, this.runPlace(p.workspace, session), p.runId));
      // The prompt this window sent names the turn (once: a run a steer started has none of its own).
      const key = sessionKey(p.workspace, session);
      if (f.prompt && this.promptShown.get(key) !== f.prompt) {
        this.promptShown.set(key, f.prompt);
        this.conversation(p.workspace, session, { type: 'user', kind: 'user', text: f.prompt, runId: p.runId });
      }
    } else if (p.state === 'idle' && prev && prev.state !== 'idle') {
      this.transcriptFolder(p.workspace, session);
      writer.line(runEndLine(p.reason, p.message, f.usage, f.plan));
      if (p.reason === 'error') this.showRunError(p.message, isSetupError(p));
      else if (p.reason === 'loop_detected' || p.reason === 'max_rounds')
        void vscode.window
          .showWarningMessage(`stepwise: the run stopped (${p.reason.replace('_', ' ')}).`, 'Show Transcript')
          .then((x) => x && this.core.transcript.show(true));
    }
    f.rounds.status(p, started ? f.prompt : undefined);
    const ended = p.state === 'idle' && !!prev && prev.state !== 'idle';
    for (const listener of this.roundListeners) listener(p.workspace, session, ended);
    this.conversation(p.workspace, session, ended ? { type: 'ended', runId: p.runId } : undefined);
    this.ui.update();
    // A worktree session's run changed files the folder has not: the list counts them (`unapplied`).
    if (ended && this.core.folders.list(p.workspace).some((s) => s.session === session && s.worktree)) this.refreshSessions(p.workspace);
  }

  /** Tells the Conversation view. */
  conversation(workspace: string | undefined, session: string, e: ConversationEvent | undefined): void {
    if (!workspace) return;
    for (const listener of this.conversationListeners) listener(workspace, session, e);
  }

  background(workspace: string, session: string): void {
    for (const listener of this.backgroundListeners) listener(workspace, session);
  }

  /** Applies a change to a session's rounds and tells the Transcript view. */
  rounds(workspace: string | undefined, session: string, change: (log: RoundLog) => void): void {
    if (!workspace) return;
    change(this.core.folders.ensure(workspace, session).rounds);
    for (const listener of this.roundListeners) listener(workspace, session, false);
  }

  /** Where a run goes on, for the transcript: the folder, and the session unless it is the folder's own. */
  private runPlace(workspace: string, session: string): string {
    const folder = folderName(workspace);
    return session === MAIN ? folder : `${folder} · ${this.core.folders.sessionTitle(workspace, session)}`;
  }

  private showRunError(message: string | undefined, setup: boolean): void {
    const text = `stepwise: the run failed${message ? `: ${message}` : ''}`;
    const actions = setup ? ['Open Settings', 'Set API Key', 'Show Transcript'] : ['Show Transcript', 'Show Server Log'];
    void vscode.window.showErrorMessage(text, ...actions).then((pick) => {
      if (pick === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'stepwise');
      else if (pick === 'Set API Key') void this.setup.setApiKey();
      else if (pick === 'Show Transcript') this.core.transcript.show(true);
      else if (pick === 'Show Server Log') this.core.serverLog.show(true);
    });
  }

  /** Names the folder (and the session) in the transcript when its lines follow another's: with several folders,
   * or when a session beside the folder's own speaks or follows one. */
  private transcriptFolder(workspace: string | undefined, session: string): void {
    const key = workspace ? sessionKey(workspace, session) : undefined;
    if (!workspace || !key || key === this.lastTranscript) return;
    const before = this.lastTranscript;
    this.lastTranscript = key;
    const folders = (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
    const sessions = session !== MAIN || (!!before && !before.endsWith(`\n${MAIN}`));
    if (folders || sessions) this.core.writer.line(`── ${sessions ? this.runPlace(workspace, session) : folderName(workspace)}`);
  }
}
