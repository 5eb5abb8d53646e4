// What the window shows of the folders' records: the plan view (a tree, each folder's session in view) and the
// status-bar item (the session running, or how many run).
import * as vscode from 'vscode';

import { EXTENSION_COMMANDS, folderForUri } from '../model/commands';
import { Core, PLAN_VIEW, folderName, folderRefs } from '../setup/core';
import type { FolderState } from '../model/folders';
import type { PlanNode } from '../model/plan';
import { MAIN, progressOf, runningSummary } from '../model/sessions';
import { NodeTree } from './tree';
import { statusBarModel } from '../model/status';

export class Ui {
  private readonly statusItem = vscode.window.createStatusBarItem('stepwise.status', vscode.StatusBarAlignment.Left, 10);
  private readonly tree: NodeTree<PlanNode>;
  readonly view: vscode.TreeView<PlanNode>;

  constructor(private readonly core: Core) {
    this.tree = new NodeTree<PlanNode>(() => core.folders.roots(folderRefs()), true);
    this.view = vscode.window.createTreeView(PLAN_VIEW, { treeDataProvider: this.tree, showCollapseAll: false });
    this.statusItem.name = 'Stepwise';
    core.disposables.push(this.statusItem, this.view);
  }

  update(): void {
    this.tree.refresh();
    this.view.title = this.core.folders.title(folderRefs());
    void vscode.commands.executeCommand('setContext', 'stepwise.running', this.core.folders.anyBusy());
    this.updateStatusBar();
  }

  /** The session the status bar shows: a busy one (the active editor's folder's first), else the active editor's
   * folder's session in view, else the last active folder's. */
  private statusSession(): FolderState | undefined {
    const folders = this.core.folders;
    const refs = folderRefs();
    const active = folderForUri(refs, vscode.window.activeTextEditor?.document.uri.toString())?.uri;
    const running = folders.running();
    const busy = running.find((f) => f.uri === active && f.session === folders.viewed(active)) ?? running.find((f) => f.uri === active) ?? running[0];
    if (busy) return busy;
    if (active && (folders.get(active)?.status || folders.plan(active))) return folders.get(active);
    const ws = this.core.lastFolder ?? active ?? refs[0]?.uri;
    return ws ? folders.get(ws) : undefined;
  }

  updateStatusBar(): void {
    const item = this.statusItem;
    const { client, serverProblem } = this.core;
    // Shown once stepwise is in use in this window (its server started, or failed to).
    if (!client && !serverProblem) {
      item.hide();
      return;
    }
    item.show();
    if (serverProblem && !client) {
      item.text = '$(error) stepwise: no server';
      item.tooltip = serverProblem;
      item.command = EXTENSION_COMMANDS.showServerLog;
      item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      return;
    }
    const f = this.statusSession();
    const ws = f?.uri;
    const multi = (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
    // Where the status is: the folder with several in the window, the session when it is not the folder's own.
    const where = ws && f ? [multi ? folderName(ws) : undefined, f.session !== MAIN ? this.core.folders.sessionTitle(ws, f.session) : undefined].filter((x) => !!x).join(' · ') : '';
    const model = statusBarModel(f?.status, f?.plan, f?.usage, where || undefined, f?.compaction, f?.mcp, f?.background.running());
    // Several sessions running: how many (each in the tooltip); a click asks which to cancel.
    const several = runningSummary(
      this.core.folders.running().map((r) => ({ label: this.core.sessionName(r.uri, r.session), state: String(r.status?.state), progress: progressOf(r.plan) })),
    );
    item.text = several?.text ?? model.text;
    item.tooltip = several?.tooltip ?? model.tooltip;
    item.command = several ? EXTENSION_COMMANDS.cancelRun : model.command;
    item.accessibilityInformation = { label: model.text.replace(/\$\([^)]*\)\s*/g, '') };
    item.backgroundColor =
      model.severity === 'error'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : model.severity === 'warning'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
  }

  async showPlan(): Promise<void> {
    await vscode.commands.executeCommand(`${PLAN_VIEW}.focus`);
  }

  /** Shows the plan view and gives the focus back to the editor that had it. */
  async revealPlanView(): Promise<void> {
    if (this.view.visible) return;
    const editor = vscode.window.activeTextEditor;
    await vscode.commands.executeCommand(`${PLAN_VIEW}.focus`);
    if (editor) await vscode.window.showTextDocument(editor.document, { viewColumn: editor.viewColumn, preserveFocus: false });
  }
}

