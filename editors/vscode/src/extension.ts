// The VS Code side of stepwise: one `stepwise lsp` for all folders of the window, the plan view, the live
// transcript, the status-bar item and the commands. Each job has its file: core.ts (what all share, one
// record per folder in folders.ts), client.ts (the language client), events.ts (the server's notifications),
// ui.ts (plan view, status bar), setup.ts (server binary, doctor, API key), runs.ts (run, steer, cancel,
// reset), planEditor.ts (the user edits the plan: items in the view, the plan as a document), rewind.ts
// (checkpoints, rewind), roundsView.ts (the Transcript view: runs and rounds), conversationView.ts (the
// Conversation view; its page is src/webview), review.ts (the review of the agent's changes: diffs, the Changes
// view, marks in editors), sessions.ts (sessions side by side: new, switch, apply, close).
// The logic that can be tested without VS Code lives in plan.ts, planEdit.ts, folders.ts, settings.ts,
// commands.ts, status.ts, transcript.ts, checkpoints.ts, rounds.ts, roundNodes.ts and conversation.ts.
import * as vscode from 'vscode';

import { Connection } from './connection/client';
import { EXTENSION_COMMANDS } from './model/commands';
import { ConversationView } from './views/conversationView';
import { Core, folderRefs } from './setup/core';
import { Runs } from './commands/runs';
import { PlanEditor } from './commands/planEditor';
import { Review } from './commands/review';
import { PlanFirst } from './commands/planFirst';
import { Sessions } from './commands/sessions';
import { Rewind } from './commands/rewind';
import { RoundsView } from './views/roundsView';
import { needsRestart } from './setup/settings';
import { Setup } from './setup/setup';
import { Ui } from './views/ui';

class Stepwise {
  private readonly core: Core;
  private readonly connection: Connection;
  private disposed = false;

  constructor(context: vscode.ExtensionContext) {
    const core = (this.core = new Core(context));
    const ui = new Ui(core);
    const setup = new Setup(core, ui, (why) => this.connection.scheduleRestart(why));
    const connection = (this.connection = new Connection(core, ui, setup));
    const runs = new Runs(core, ui, setup, connection);
    const planEditor = new PlanEditor(core, connection);
    // The plan as a document follows the session in view.
    connection.events.planListeners.push((ws, session) => session === core.folders.viewed(ws) && planEditor.planChanged(ws));
    core.viewListeners.push((ws) => {
      planEditor.planChanged(ws);
      ui.update();
    });
    const planFirst = new PlanFirst(core, connection);
    connection.events.roundListeners.push((ws, session) => planFirst.statusChanged(ws, session));
    const rounds = new RoundsView(core, connection);
    const conversation = new ConversationView(core, connection, setup);
    connection.askInView = (question, token) => conversation.ask(question, token);
    new Sessions(core, connection, new Review(core, connection));
    new Rewind(core, connection, (ws) => void rounds.sync(ws));
    const disposables = core.disposables;
    ui.update();
    // Opening the plan view is using stepwise: the server starts then (and shows the folders' plans), and the
    // view's empty text says what setup is missing, as the server finds it.
    let modelCheck: NodeJS.Timeout | undefined;
    const checkModelSoon = () => {
      if (!ui.view.visible) return;
      clearTimeout(modelCheck);
      modelCheck = setTimeout(() => void setup.checkModel(), 300);
    };
    disposables.push(
      ui.view.onDidChangeVisibility((e) => {
        if (!e.visible) return;
        void connection.ensureClient(false);
        checkModelSoon();
      }),
      { dispose: () => clearTimeout(modelCheck) },
    );
    if (ui.view.visible) checkModelSoon();

    const cmd = (id: string, fn: (...args: any[]) => unknown) => disposables.push(vscode.commands.registerCommand(id, fn));
    cmd(EXTENSION_COMMANDS.runTask, (prompt?: string) => runs.runTask(typeof prompt === 'string' ? prompt : undefined));
    cmd(EXTENSION_COMMANDS.cancelRun, () => runs.cancelRun());
    cmd(EXTENSION_COMMANDS.resetSession, () => runs.resetSession());
    cmd(EXTENSION_COMMANDS.showPlan, () => ui.showPlan());
    cmd(EXTENSION_COMMANDS.setApiKey, () => setup.setApiKey());
    cmd(EXTENSION_COMMANDS.showTranscript, () => core.transcript.show(true));
    cmd(EXTENSION_COMMANDS.showServerLog, () => core.serverLog.show(true));
    cmd(EXTENSION_COMMANDS.checkSetup, () => setup.checkSetup());
    cmd(EXTENSION_COMMANDS.steerRun, (text?: string) => runs.steer(typeof text === 'string' ? text : undefined));

    disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (needsRestart((k) => e.affectsConfiguration(k))) connection.scheduleRestart('settings changed');
        if (e.affectsConfiguration('stepwise')) checkModelSoon();
      }),
      context.secrets.onDidChange((e) => {
        if (e.key.startsWith('stepwise.apiKey.')) {
          connection.scheduleRestart('API key changed');
          checkModelSoon();
        }
      }),
      vscode.workspace.onDidChangeWorkspaceFolders(() => {
        checkModelSoon();
        core.folders.retain(new Set(folderRefs().map((f) => f.uri)));
        if (!core.client && !core.starting) connection.startIfUsed();
        ui.update();
      }),
      vscode.window.onDidChangeActiveTextEditor(() => ui.updateStatusBar()),
      vscode.window.onDidChangeVisibleTextEditors(() => {
        if (core.folders.hasPlanItems()) connection.refreshLenses(500);
      }),
    );
  }

  /** No server in windows that do not use stepwise: it starts with a command, the plan view, or here when a
   * folder has a saved session (a stat per folder, no process). */
  startIfUsed(): void {
    this.connection.startIfUsed();
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const stopping = this.connection.dispose();
    for (const d of this.core.disposables) d.dispose();
    await stopping;
  }
}

let instance: Stepwise | undefined;

export function activate(context: vscode.ExtensionContext): void {
  instance = new Stepwise(context);
  context.subscriptions.push({ dispose: () => void instance?.dispose() });
  instance.startIfUsed();
}

export async function deactivate(): Promise<void> {
  const s = instance;
  instance = undefined;
  if (s) await s.dispose();
}
