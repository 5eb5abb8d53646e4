// The commands that start, cancel and reset a folder's runs (in its session in view).
import * as vscode from 'vscode';

import type { Connection } from '../connection/client';
import { SERVER_COMMANDS, runArguments, steerArguments, validatePrompt, validateSteer } from '../model/commands';
import { Core, folderRefs, pickFolder, showError, workspaceFolderOf } from '../setup/core';
import type { FolderRef } from '../model/plan';
import type { Setup } from '../setup/setup';
import type { Ui } from '../views/ui';

export class Runs {
  constructor(
    private readonly core: Core,
    private readonly ui: Ui,
    private readonly setup: Setup,
    private readonly connection: Connection,
  ) {}

  /** Run Task; while a run goes on in the folder, its input steers that run instead. */
  async runTask(promptArg?: string): Promise<void> {
    const folder = await pickFolder(undefined, 'Run the task in which folder?');
    if (!folder) return;
    if (this.core.folders.busy(folder.uri) && this.connection.running()) return this.steerIn(folder, promptArg);
    const wsFolder = workspaceFolderOf(folder.uri);
    if (!wsFolder) return;
    if (!(await this.setup.readyToRun(wsFolder))) return;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const prompt =
      promptArg ??
      (await vscode.window.showInputBox({
        title: 'Stepwise: Run Task',
        prompt: `What should the agent do in ${folder.name}?`,
        placeHolder: 'e.g. add input validation to the signup form and test it',
        ignoreFocusOut: true,
        validateInput: validatePrompt,
      }));
    const args = runArguments(prompt, folder.uri);
    if (!args) return;
    this.core.folders.ensure(folder.uri).prompt = args[0].prompt;
    try {
      const result = (await this.core.execute(client, SERVER_COMMANDS.run, args)) as { runId?: string } | null;
      this.core.log(`[stepwise] run ${result?.runId ?? '?'} started in ${folder.name}`);
    } catch (error) {
      showError(error);
      return;
    }
    this.core.transcript.show(true);
    await this.ui.revealPlanView();
  }

  /** Stepwise: Steer: a line for the agent, read at its next step (with no run going on it starts one). */
  async steer(textArg?: string): Promise<void> {
    const busy = folderRefs().filter((f) => this.core.folders.busy(f.uri));
    const folder = await pickFolder(busy.length > 0 ? busy : undefined, 'Steer the run in which folder?');
    if (folder) await this.steerIn(folder, textArg);
  }

  private async steerIn(folder: FolderRef, textArg?: string): Promise<void> {
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const text =
      textArg ??
      (await vscode.window.showInputBox({
        title: 'Stepwise: Steer',
        prompt: `A message for the agent working in ${folder.name}; it reads it at its next step.`,
        placeHolder: 'e.g. skip the tests for now, fix the parser first',
        ignoreFocusOut: true,
        validateInput: validateSteer,
      }));
    const args = steerArguments(text, folder.uri);
    if (!args) return;
    try {
      await this.core.execute(client, SERVER_COMMANDS.steer, args);
      this.core.writer.line(`» you: ${args[0].text}`);
    } catch (error) {
      showError(error);
    }
  }

  /** Cancel (also the status bar's click): the run going on; with several sessions running, the one picked. */
  async cancelRun(): Promise<void> {
    const client = this.connection.running();
    const running = this.core.folders.running();
    if (!client || running.length === 0) {
      void vscode.window.showInformationMessage('stepwise: no run in progress.');
      return;
    }
    // Several: the folder as for any command (the active editor's, or asked), then the session if it has more.
    const folder = running.length > 1 ? await pickFolder(folderRefs().filter((f) => running.some((r) => r.uri === f.uri)), 'Cancel the run in which folder?') : undefined;
    if (running.length > 1 && !folder) return;
    const inFolder = folder ? running.filter((r) => r.uri === folder.uri) : running;
    const target =
      inFolder.length === 1
        ? inFolder[0]
        : (
            await vscode.window.showQuickPick(
              inFolder.map((r) => ({ label: this.core.sessionName(r.uri, r.session), description: r.status?.state, target: r })),
              { placeHolder: 'Cancel the run of which session?' },
            )
          )?.target;
    if (!target) return;
    try {
      await this.core.execute(client, SERVER_COMMANDS.cancel, [{ workspace: target.uri, session: target.session }]);
    } catch (error) {
      showError(error);
    }
  }

  /** Reset Session: a new conversation and an empty plan for the folder's session in view. */
  async resetSession(): Promise<void> {
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const folder = await pickFolder(undefined, 'Reset the session of which folder?');
    if (!folder) return;
    const folders = this.core.folders;
    const session = folders.viewed(folder.uri);
    try {
      await this.core.execute(client, SERVER_COMMANDS.reset, [{ workspace: folder.uri, session }]);
      folders.updatePlan({ workspace: folder.uri, session, items: [], completed: 0, total: 0 });
      folders.ensure(folder.uri, session).usage = undefined;
      this.connection.events.rounds(folder.uri, session, (log) => log.clear());
      const name = this.core.sessionName(folder.uri, session);
      this.core.writer.line(`━━ ${name} of ${folder.name} starts anew`);
      this.ui.update();
      void vscode.window.showInformationMessage(`stepwise: ${name} of ${folder.name} starts anew: a new conversation and an empty plan.`);
    } catch (error) {
      showError(error);
    }
  }
}
