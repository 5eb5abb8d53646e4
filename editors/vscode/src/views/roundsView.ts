// The Transcript view: the runs and rounds of each folder's session in view as a tree (rounds.ts, roundNodes.ts),
// next to the plan.
// It follows the server's notifications, and asks for `stepwise.checkpoints` when the server starts (a saved
// session's rounds), when a run ends (the files each round's rewind puts back) and after a rewind.
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';

import type { Checkpoint } from '../model/checkpoints';
import type { Connection } from '../connection/client';
import { SERVER_COMMANDS } from '../model/commands';
import { Core, folderRefs } from '../setup/core';
import { roundTree, transcriptTitle, type RoundNode } from '../model/roundNodes';
import { NodeTree } from './tree';

export const ROUNDS_VIEW = 'stepwise.roundsView';

export class RoundsView {
  private readonly provider: NodeTree<RoundNode>;
  readonly view: vscode.TreeView<RoundNode>;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly core: Core,
    private readonly connection: Connection,
  ) {
    this.provider = new NodeTree<RoundNode>(() => roundTree(folderRefs(), (uri) => core.folders.get(uri)?.rounds), false);
    this.view = vscode.window.createTreeView(ROUNDS_VIEW, { treeDataProvider: this.provider, showCollapseAll: true });
    core.disposables.push(this.view, { dispose: () => this.timer && clearTimeout(this.timer) });
    connection.events.roundListeners.push((ws, session, ended) => {
      this.refreshSoon();
      if (ended && session === core.folders.viewed(ws)) void this.sync(ws);
    });
    // Another session in view: its rounds (those it had before this window saw it too).
    core.viewListeners.push((ws) => {
      this.refreshSoon();
      void this.sync(ws);
    });
    connection.startListeners.push((client) => void this.syncAll(client));
    // Opening the view is using stepwise: the server starts then.
    core.disposables.push(this.view.onDidChangeVisibility((e) => e.visible && void connection.ensureClient(false)));
  }

  /** Text streams in chunks: one redraw per 100 ms at most. */
  private refreshSoon(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.provider.refresh();
      this.view.title = transcriptTitle(folderRefs().map((f) => this.core.folders.get(f.uri)?.rounds));
    }, 100);
  }

  /** Takes the server's checkpoint list of the folder's session in view into its rounds. */
  async sync(workspace: string, client = this.connection.running()): Promise<void> {
    if (!client) return;
    const session = this.core.folders.viewed(workspace);
    try {
      const result = await this.core.execute(client, SERVER_COMMANDS.checkpoints, [{ workspace, session }]);
      if (!Array.isArray(result) || this.core.client !== client) return;
      this.core.folders.ensure(workspace, session).rounds.checkpoints(result as Checkpoint[]);
      this.refreshSoon();
    } catch (error) {
      this.core.log(`[stepwise] stepwise.checkpoints for ${workspace} failed: ${String(error)}`);
    }
  }

  private async syncAll(client: LanguageClient): Promise<void> {
    for (const f of folderRefs()) await this.sync(f.uri, client);
  }
}
