// Checkpoints and rewind: Stepwise: Show Checkpoints (a quick pick of the folder's checkpoints), "Rewind to
// Here" on plan items and on the Transcript view's entries; each asks first, listing the files that go back,
// and offers files only or the conversation only. Open documents are put back through workspace edits, so
// Undo brings the agent's work back.
import type { RewindArgs } from '../protocol/generated';
import * as vscode from 'vscode';

import {
  REWIND_CHOICES,
  checkpointForStep,
  checkpointItem,
  restoreFor,
  rewindQuestion,
  rewindSummary,
  type Checkpoint,
  type RewindResult,
} from '../model/checkpoints';
import type { Connection } from '../connection/client';
import { REWIND_COMMANDS, SERVER_COMMANDS, workspaceArguments } from '../model/commands';
import { Core, folderName, pickFolder, showError } from '../setup/core';
import type { PlanNode } from '../model/plan';
import type { RoundNode } from '../model/roundNodes';

export class Rewind {
  constructor(
    private readonly core: Core,
    private readonly connection: Connection,
    /** Called with the folder after a rewind (the Transcript view asks for the checkpoints again). */
    private readonly rewound: (workspace: string) => void,
  ) {
    const cmd = (id: string, fn: (...args: any[]) => unknown) => core.disposables.push(vscode.commands.registerCommand(id, fn));
    cmd(REWIND_COMMANDS.showCheckpoints, () => this.showCheckpoints());
    cmd(REWIND_COMMANDS.rewindToItem, (n?: PlanNode) => this.rewindToItem(n));
    cmd(REWIND_COMMANDS.rewindToEntry, (n?: RoundNode) => this.rewindToEntry(n));
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

  /** "Rewind to Here" on a Transcript entry: back to the checkpoint before its round (a run: before its task). */
  private async rewindToEntry(n: RoundNode | undefined): Promise<void> {
    if (!n?.checkpoint) return;
    const checkpoints = await this.list(n.workspace);
    if (!checkpoints) return;
    // The server's entry, for the files that go back now.
    const c = checkpoints.find((x) => x.id === n.checkpoint);
    if (!c) {
      void vscode.window.showInformationMessage('stepwise: that checkpoint is gone (rewound past, or dropped to keep the store under its limit).');
      this.rewound(n.workspace);
      return;
    }
    await this.rewind(n.workspace, c);
  }

  private async rewind(workspace: string, c: Checkpoint): Promise<void> {
    const q = rewindQuestion(c, folderName(workspace));
    const answer = await vscode.window.showWarningMessage(q.message, { modal: true, detail: q.detail }, ...REWIND_CHOICES.map((x) => x.title));
    const restore = restoreFor(answer);
    if (!restore) return;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    try {
      const args: [RewindArgs] = [{ workspace, checkpoint: c.id, ...(restore === 'both' ? {} : { restore }) }];
      const result: RewindResult | null = await this.core.execute(client, SERVER_COMMANDS.rewind, args);
      this.rewound(workspace);
      const summary = rewindSummary(result);
      this.core.writer.line(`⟲ ${summary.replace(/^stepwise: /, '')}`);
      if ((result?.conflicts?.length ?? 0) > 0) void vscode.window.showWarningMessage(summary);
      else void vscode.window.showInformationMessage(summary);
    } catch (error) {
      showError(error);
    }
  }
}
