// Checkpoints and rewind: Stepwise: Show Checkpoints (a quick pick of the folder's checkpoints), "Rewind to
// Here" on plan items; each asks first, listing the files that go back. Open documents are put back through
// workspace edits, so Undo brings the agent's work back.
import * as vscode from 'vscode';

import { checkpointForStep, checkpointItem, rewindQuestion, rewindSummary, type Checkpoint, type RewindResult } from './checkpoints';
import type { Connection } from './client';
import { REWIND_COMMANDS, SERVER_COMMANDS, workspaceArguments } from './commands';
import { Core, folderName, pickFolder, showError } from './core';
import type { PlanNode } from './plan';

export class Rewind {
  constructor(
    private readonly core: Core,
    private readonly connection: Connection,
  ) {
    const cmd = (id: string, fn: (...args: any[]) => unknown) => core.disposables.push(vscode.commands.registerCommand(id, fn));
    cmd(REWIND_COMMANDS.showCheckpoints, () => this.showCheckpoints());
    cmd(REWIND_COMMANDS.rewindToItem, (n?: PlanNode) => this.rewindToItem(n));
  }

  private async list(workspace: string): Promise<Checkpoint[] | undefined> {
    const client = await this.connection.ensureClient(true);
    if (!client) return undefined;
    try {
      const result = await this.core.execute(client, SERVER_COMMANDS.checkpoints, workspaceArguments(workspace));
      return Array.isArray(result) ? (result as Checkpoint[]) : [];
    } catch (error) {
      showError(error);
      return undefined;
    }
  }

  /** Stepwise: Show Checkpoints: newest first; picking one offers to rewind to it. */
  private async showCheckpoints(): Promise<void> {
    const folder = await pickFolder(undefined, 'The checkpoints of which folder?');
    if (!folder) return;
    const checkpoints = await this.list(folder.uri);
    if (!checkpoints) return;
    if (checkpoints.length === 0) {
      void vscode.window.showInformationMessage(`stepwise: no checkpoints in ${folder.name} yet; one is taken before every round of a run.`);
      return;
    }
    const pick = await vscode.window.showQuickPick(
      [...checkpoints].reverse().map((c) => ({ ...checkpointItem(c), checkpoint: c })),
      { title: `Stepwise: Checkpoints of ${folder.name}`, placeHolder: 'Rewind to which checkpoint?', matchOnDetail: true },
    );
    if (pick) await this.rewind(folder.uri, pick.checkpoint);
  }

  /** "Rewind to Here" on a plan item: back to before the first round that worked on it. */
  private async rewindToItem(n: PlanNode | undefined): Promise<void> {
    if (!n || n.kind !== 'item') return;
    const checkpoints = await this.list(n.workspace);
    if (!checkpoints) return;
    const c = checkpointForStep(checkpoints, n.label);
    if (!c) {
      void vscode.window.showInformationMessage(`stepwise: no checkpoint was taken while “${n.label}” was in progress.`);
      return;
    }
    await this.rewind(n.workspace, c);
  }

  private async rewind(workspace: string, c: Checkpoint): Promise<void> {
    const q = rewindQuestion(c, folderName(workspace));
    const answer = await vscode.window.showWarningMessage(q.message, { modal: true, detail: q.detail }, 'Rewind');
    if (answer !== 'Rewind') return;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    try {
      const result = (await this.core.execute(client, SERVER_COMMANDS.rewind, [{ workspace, checkpoint: c.id }])) as RewindResult | null;
      const summary = rewindSummary(result);
      this.core.writer.line(`⟲ ${summary.replace(/^stepwise: /, '')}`);
      if ((result?.conflicts?.length ?? 0) > 0) void vscode.window.showWarningMessage(summary);
      else void vscode.window.showInformationMessage(summary);
    } catch (error) {
      showError(error);
    }
  }
}
