// What the window shows of the folders' records: the plan view (a tree) and the status-bar item.
import * as vscode from 'vscode';

import { EXTENSION_COMMANDS, folderForUri } from '../model/commands';
import { Core, PLAN_VIEW, folderName, folderRefs } from '../setup/core';
import type { PlanNode } from '../model/plan';
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

  /** The folder the status bar shows: a busy one (the active editor's first), else the active editor's, else the last active. */
  private statusFolder(): string | undefined {
    const folders = this.core.folders;
    const refs = folderRefs();
    const active = folderForUri(refs, vscode.window.activeTextEditor?.document.uri.toString())?.uri;
    if (folders.busy(active)) return active;
    const anyBusy = folders.firstBusy();
    if (anyBusy) return anyBusy;
    if (active && (folders.get(active)?.status || folders.plan(active))) return active;
    return this.core.lastFolder ?? active ?? refs[0]?.uri;
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
    const ws = this.statusFolder();
    const f = this.core.folders.get(ws);
    const multi = (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
    const model = statusBarModel(f?.status, f?.plan, f?.usage, multi && ws ? folderName(ws) : undefined, f?.compaction, f?.mcp, f?.background.running());
    item.text = model.text;
    item.tooltip = model.tooltip;
    item.command = model.command;
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
