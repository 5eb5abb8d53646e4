// The commands that start, cancel and reset a folder's runs.
import * as vscode from 'vscode';

import type { Connection } from '../connection/client';
import { SERVER_COMMANDS, runArguments, steerArguments, validatePrompt, validateSteer, workspaceArguments } from '../model/commands';
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

  async cancelRun(): Promise<void> {
    const client = this.connection.running();
    if (!client) {
      void vscode.window.showInformationMessage('stepwise: no run in progress.');
      return;
    }
    const busy = folderRefs().filter((f) => this.core.folders.busy(f.uri));
    const folder = await pickFolder(busy.length > 0 ? busy : undefined, 'Cancel the run in which folder?');
    if (!folder) return;
    try {
      await this.core.execute(client, SERVER_COMMANDS.cancel, workspaceArguments(folder.uri));
    } catch (error) {
      showError(error);
    }
  }

  async newSession(): Promise<void> {
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const folder = await pickFolder(undefined, 'Start a new session in which folder?');
    if (!folder) return;
    try {
      await this.core.execute(client, SERVER_COMMANDS.reset, workspaceArguments(folder.uri));
      const folders = this.core.folders;
      folders.updatePlan({ workspace: folder.uri, items: [], completed: 0, total: 0 });
      folders.ensure(folder.uri).usage = undefined;
      this.connection.events.rounds(folder.uri, (log) => log.clear());
      this.core.writer.line(`━━ new session in ${folder.name}`);
      this.ui.update();
      void vscode.window.showInformationMessage(`stepwise: new session in ${folder.name}.`);
    } catch (error) {
      showError(error);
    }
  }
}
