// What the Plan and Transcript views' trees are made of. Pure logic: no `vscode` import (tree.ts draws them).

export interface IconSpec {
  /** A codicon id, e.g. `pass-filled`, `sync~spin`. */
  id: string;
  /** A theme color id, e.g. `testing.iconPassed`. */
  color?: string;
}

export interface TreeNode<Kind extends string, Child> {
  kind: Kind;
  /** Stable id, unique in the tree. */
  id: string;
  workspace: string;
  label: string;
  description?: string;
  tooltip: string;
  icon: IconSpec;
  /** Text for screen readers (and the e2e tests). */
  accessibility: string;
  contextValue: string;
  /** Shown expanded at first (else the tree's default). */
  expanded?: boolean;
  children?: Child[];
  /** Run when the row is clicked. */
  command?: { command: string; title: string; arguments?: unknown[] };
}
