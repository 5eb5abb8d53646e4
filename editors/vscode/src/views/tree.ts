// One tree data provider for the Plan and Transcript views: nodes (treeNode.ts) drawn as tree items.
import * as vscode from 'vscode';
import type { TreeNode } from '../model/treeNode';

export class NodeTree<T extends TreeNode<string, T>> implements vscode.TreeDataProvider<T> {
  private readonly changed = new vscode.EventEmitter<T | undefined | void>();
  readonly onDidChangeTreeData = this.changed.event;

  /** `roots`: the top level now; `expandByDefault`: how a node with children opens when it does not say. */
  constructor(
    private readonly roots: () => T[],
    private readonly expandByDefault: boolean,
  ) {}

  refresh(): void {
    this.changed.fire();
  }

  getTreeItem(n: T): vscode.TreeItem {
    const state = vscode.TreeItemCollapsibleState;
    const collapsible = (n.children?.length ?? 0) === 0 ? state.None : n.expanded ?? this.expandByDefault ? state.Expanded : state.Collapsed;
    const item = new vscode.TreeItem(n.label, collapsible);
    item.id = n.id;
    item.description = n.description;
    item.tooltip = n.tooltip;
    item.iconPath = new vscode.ThemeIcon(n.icon.id, n.icon.color ? new vscode.ThemeColor(n.icon.color) : undefined);
    item.accessibilityInformation = { label: n.accessibility };
    item.contextValue = n.contextValue;
    if (n.command) item.command = n.command;
    return item;
  }

  getChildren(n?: T): T[] {
    return n ? n.children ?? [] : this.roots();
  }
}
