// Review of what the agent changed: Stepwise: Review Changes opens each changed file in a diff editor (left the
// text before the agent's first change, read-only, from the `stepwise-before` scheme; right the file itself, so
// VS Code's own per-hunk revert works), the Changes view lists them grouped by plan step with Keep / Undo per
// file and for all, normal editors mark the unreviewed hunks (the server's code lenses offer Keep / Undo above
// each), and Comment on Change sends a line's remark to the agent. All through `stepwise.changes` and
// `stepwise.review`; `stepwise/review` says when to look again. What is shown is the review of the folder's
// session in view (a worktree session's files are its worktree's), or of the run an Apply Session made.
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';

import type { Connection } from '../connection/client';
import type * as wire from '../protocol/generated';
import { onNotification } from '../protocol/notifications';
import { Core, folderName, folderRefs, pickFolder, showError, workspaceFolderOf } from '../setup/core';
import { changesTitle } from '../model/changes';
import { hunks as diffHunks } from '../model/hunks';
import { sessionOf } from '../model/sessions';
import { NodeTree } from '../views/tree';
import type { TreeNode } from '../model/treeNode';

export const BEFORE_SCHEME = 'stepwise-before';
export const CHANGES_VIEW = 'stepwise.changesView';
export const REVIEW_COMMANDS = {
  reviewChanges: 'stepwise.reviewChanges',
  keepChanges: 'stepwise.keepChanges',
  undoChanges: 'stepwise.undoChanges',
  commentChange: 'stepwise.commentChange',
  openChange: 'stepwise.openChange',
} as const;
/** Diff editors opened at once by Review Changes; the Changes view lists the rest. */
const MAX_DIFFS = 10;

/** A file of `stepwise.changes` as read: `wire.FileChanges`, its hunks possibly missing (older servers). */
export type ChangedFile = Omit<wire.FileChanges, 'hunks'> & { hunks?: wire.Hunk[] };

type Changes = Partial<Omit<wire.Changes, 'files'>> & { files: ChangedFile[] };

/** Whose changes a folder's review shows: a session's latest run, or one run (an apply's). */
interface Scope {
  session: string;
  runId?: string;
}

export interface ChangeNode extends TreeNode<'step' | 'file', ChangeNode> {
  path?: string;
}

export class Review implements vscode.TextDocumentContentProvider {
  private readonly changes = new Map<string, Changes>();
  /** Per folder, whose changes are shown (default: the session in view's latest run). */
  private readonly scopes = new Map<string, Scope>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly tree: NodeTree<ChangeNode>;
  private readonly view: vscode.TreeView<ChangeNode>;
  private readonly added = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private readonly removed = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    borderStyle: 'solid',
    borderWidth: '2px 0 0 0',
    borderColor: new vscode.ThemeColor('editorGutter.deletedBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private decorateTimer: NodeJS.Timeout | undefined;
  private readonly refreshTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly core: Core,
    private readonly connection: Connection,
  ) {
    this.tree = new NodeTree<ChangeNode>(() => this.roots(), true);
    this.view = vscode.window.createTreeView(CHANGES_VIEW, { treeDataProvider: this.tree, showCollapseAll: true });
    const cmd = (id: string, fn: (...args: any[]) => unknown) => core.disposables.push(vscode.commands.registerCommand(id, fn));
    core.disposables.push(
      this.changed,
      this.view,
      this.added,
      this.removed,
      vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, this),
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorateSoon()),
      vscode.workspace.onDidChangeTextDocument((e) => e.document.uri.scheme === 'file' && this.decorateSoon()),
      { dispose: () => this.decorateTimer && clearTimeout(this.decorateTimer) },
      { dispose: () => this.refreshTimers.forEach((t) => clearTimeout(t)) },
    );
    cmd(REVIEW_COMMANDS.reviewChanges, () => this.reviewChanges());
    cmd(REVIEW_COMMANDS.keepChanges, (n?: ChangeNode) => this.act('keep', n));
    cmd(REVIEW_COMMANDS.undoChanges, (n?: ChangeNode) => this.act('undo', n));
    cmd(REVIEW_COMMANDS.commentChange, () => this.comment());
    cmd(REVIEW_COMMANDS.openChange, (ws?: string, path?: string) => ws && path && this.openDiff(ws, path));
    connection.startListeners.push((client) => this.listen(client));
    // Another session in view: its changes.
    core.viewListeners.push((ws) => {
      this.scopes.delete(ws);
      void this.refresh(ws);
    });
  }

  private scope(workspace: string): Scope {
    return this.scopes.get(workspace) ?? { session: this.core.folders.viewed(workspace) };
  }

  /** The scope's arguments of `stepwise.changes` and `stepwise.review`. */
  private at(workspace: string): { workspace: string; session: string; runId?: string } {
    const { session, runId } = this.scope(workspace);
    return { workspace, session, ...(runId ? { runId } : {}) };
  }

  /** Where the scope's files are: a worktree session's worktree, else the folder (none outside the window). */
  private root(workspace: string): vscode.Uri | undefined {
    const worktree = this.core.folders.list(workspace).find((s) => s.session === this.scope(workspace).session)?.worktree;
    return worktree ? vscode.Uri.file(worktree) : workspaceFolderOf(workspace)?.uri;
  }

  /** Opens the review of one run of a session (an Apply Session's run): the Changes view and its diffs. */
  async showRun(workspace: string, session: string, runId: string): Promise<void> {
    this.scopes.set(workspace, { session, runId });
    await this.open(workspace);
  }

  private listen(client: LanguageClient): void {
    onNotification(client, 'stepwise/review', (p) => {
      if (p?.workspace && sessionOf(p) === this.scope(p.workspace).session) this.refreshSoon(p.workspace);
    });
    // The folders' changes as the new server has them.
    for (const f of folderRefs()) void this.refresh(f.uri);
  }

  // ---- the server -------------------------------------------------------------------------------------

  private async fetch(workspace: string): Promise<Changes | undefined> {
    const client = await this.connection.ensureClient(true);
    if (!client) return undefined;
    const result = (await this.core.execute(client, 'stepwise.changes', [this.at(workspace)])) as Changes | null;
    const files = Array.isArray(result?.files) ? result.files.filter((f) => f && typeof f.path === 'string') : [];
    const changes = { runId: result?.runId, files };
    this.changes.set(workspace, changes);
    for (const f of files) this.changed.fire(beforeUri(workspace, f.path));
    this.tree.refresh();
    this.view.title = changesTitle([...this.changes.values()].flatMap((c) => c.files));
    // With sessions side by side the view names whose changes it lists.
    const session = this.scope(workspace).session;
    this.view.description = this.core.folders.list(workspace).length > 1 ? this.core.sessionName(workspace, session) : undefined;
    this.decorateSoon();
    return changes;
  }

  /** A burst of `stepwise/review` (one per round of a run) asks once. */
  private refreshSoon(workspace: string): void {
    clearTimeout(this.refreshTimers.get(workspace));
    this.refreshTimers.set(
      workspace,
      setTimeout(() => {
        this.refreshTimers.delete(workspace);
        void this.refresh(workspace);
      }, 300),
    );
  }

  async refresh(workspace: string): Promise<void> {
    try {
      await this.fetch(workspace);
    } catch (error) {
      this.core.log(`[stepwise] stepwise.changes for ${workspace} failed: ${String(error)}`);
    }
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const f = this.changes.get(uri.query)?.files.find((x) => x.path === uri.path.slice(1));
    return f?.before ?? '';
  }

  // ---- commands ---------------------------------------------------------------------------------------

  /** Stepwise: Review Changes: the Changes view and a diff editor per changed file. */
  private async reviewChanges(): Promise<void> {
    const folder = await pickFolder(undefined, 'Review the changes in which folder?');
    if (!folder) return;
    this.scopes.delete(folder.uri);
    await this.open(folder.uri);
  }

  /** The Changes view and a diff editor per unreviewed file of the folder's scope. */
  private async open(workspace: string): Promise<void> {
    let changes: Changes | undefined;
    try {
      changes = await this.fetch(workspace);
    } catch (error) {
      return showError(error);
    }
    if (!changes) return;
    if (changes.files.length === 0) {
      void vscode.window.showInformationMessage(`stepwise: the agent has changed no files in ${this.core.sessionName(workspace, this.scope(workspace).session)} of ${folderName(workspace)}.`);
      return;
    }
    await vscode.commands.executeCommand(`${CHANGES_VIEW}.focus`);
    const open = changes.files.filter((f) => !f.reviewed).slice(0, MAX_DIFFS);
    for (const f of open.length > 0 ? open : changes.files.slice(0, 1)) await this.openDiff(workspace, f.path, true);
  }

  private async openDiff(workspace: string, path: string, pinned = false): Promise<void> {
    const root = this.root(workspace);
    const f = this.changes.get(workspace)?.files.find((x) => x.path === path);
    if (!root || !f) return;
    // A deleted file has no right side on disk: its "now" is empty.
    const right = f.status === 'deleted' ? beforeUri(workspace, path, true) : vscode.Uri.joinPath(root, path);
    const title = `${path} (${f.status === 'created' ? 'created' : f.status === 'deleted' ? 'deleted' : 'before'} ↔ now)`;
    await vscode.commands.executeCommand('vscode.diff', beforeUri(workspace, path), right, title, { preview: !pinned });
  }

  /** Keep / Undo on a file of the Changes view, or (no file) on every unreviewed file of the folder. */
  private async act(action: 'keep' | 'undo', n: ChangeNode | undefined): Promise<void> {
    const workspace = n?.workspace ?? (await pickFolder(undefined, `${action === 'keep' ? 'Keep' : 'Undo'} the changes in which folder?`))?.uri;
    if (!workspace) return;
    const changes = this.changes.get(workspace) ?? (await this.fetch(workspace).catch(() => undefined));
    const paths = n?.path ? [n.path] : n?.kind === 'step' ? filesOfStep(changes, n.label) : (changes?.files ?? []).filter((f) => !f.reviewed || action === 'undo').map((f) => f.path);
    if (paths.length === 0) return;
    if (action === 'undo' && !n?.path) {
      const answer = await vscode.window.showWarningMessage(
        `Undo the agent's changes to ${paths.length === 1 ? paths[0] : `${paths.length} files`}?`,
        { modal: true, detail: `${paths.join('\n')}\n\nOpen documents change as edits (Undo brings them back).` },
        'Undo',
      );
      if (answer !== 'Undo') return;
    }
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const conflicts: string[] = [];
    for (const path of paths) {
      try {
        const r = (await this.core.execute(client, 'stepwise.review', [{ ...this.at(workspace), path, action }])) as { conflicts?: string[] } | null;
        conflicts.push(...(r?.conflicts ?? []));
      } catch (error) {
        showError(error);
      }
    }
    if (conflicts.length > 0) void vscode.window.showWarningMessage(`stepwise: changed since by someone else, left alone: ${conflicts.join(', ')}`);
    await this.refresh(workspace);
  }

  /** Comment on Change: a remark on the cursor's line goes to the agent (naming the file and the hunk). */
  private async comment(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const folder = editor && vscode.workspace.getWorkspaceFolder(editor.document.uri);
    if (!editor || !folder) return;
    const workspace = folder.uri.toString();
    const path = vscode.workspace.asRelativePath(editor.document.uri, false);
    const f = this.changes.get(workspace)?.files.find((x) => x.path === path);
    const line = editor.selection.active.line;
    const hunk = f ? diffHunks(f.before ?? '', editor.document.getText()).findIndex((h) => line >= h.start && line <= h.start + Math.max(h.count - 1, 0)) : -1;
    const text = await vscode.window.showInputBox({
      title: 'Stepwise: Comment on Change',
      prompt: `A remark on ${path}${hunk >= 0 ? '' : `, line ${line + 1}`} for the agent (it reads it at its next step, or starts a run)`,
      validateInput: (v) => (v.trim() ? undefined : 'Say what the agent should do'),
    });
    if (!text?.trim()) return;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    try {
      if (f) {
        const args: wire.ReviewArgs = { ...this.at(workspace), path, action: 'comment', text: hunk >= 0 ? text.trim() : `line ${line + 1}: ${text.trim()}`, ...(hunk >= 0 ? { hunks: [hunk] } : {}) };
        await this.core.execute(client, 'stepwise.review', [args]);
      } else {
        await this.core.execute(client, 'stepwise.steer', [{ workspace, session: this.scope(workspace).session, text: `Comment on ${path} (line ${line + 1}): ${text.trim()}` }]);
      }
      this.core.writer.line(`» you on ${path}:${line + 1}: ${text.trim()}`);
    } catch (error) {
      showError(error);
    }
  }

  // ---- the Changes view and decorations -------------------------------------------------------------------

  private roots(): ChangeNode[] {
    const out: ChangeNode[] = [];
    for (const [workspace, changes] of this.changes) {
      const groups = new Map<string, ChangedFile[]>();
      for (const f of changes.files) {
        const step = f.steps?.[0] ?? 'No plan step';
        if (!groups.has(step)) groups.set(step, []);
        groups.get(step)?.push(f);
      }
      for (const [step, files] of groups) {
        const children = files.map((f): ChangeNode => {
          const pending = (f.hunks ?? []).filter((h) => !h.reviewed).length;
          const state = f.reviewed ? 'reviewed' : pending > 0 ? `${pending} ${pending === 1 ? 'hunk' : 'hunks'} to review` : 'to review';
          return {
            kind: 'file',
            id: `${workspace}#${f.path}`,
            workspace,
            path: f.path,
            label: f.path,
            description: `${f.status} · ${state}`,
            tooltip: `${f.path}: ${f.status}, ${state}${f.steps.length > 1 ? `\nsteps: ${f.steps.join('; ')}` : ''}`,
            icon: { id: f.reviewed ? 'pass' : f.status === 'created' ? 'diff-added' : f.status === 'deleted' ? 'diff-removed' : 'diff-modified' },
            accessibility: `${f.path}, ${f.status}, ${state}`,
            contextValue: 'stepwise.change.file',
            command: { command: REVIEW_COMMANDS.openChange, title: 'Open Diff', arguments: [workspace, f.path] },
          };
        });
        out.push({
          kind: 'step',
          id: `${workspace}#step:${step}`,
          workspace,
          label: step,
          tooltip: step,
          icon: { id: 'checklist' },
          accessibility: `step ${step}, ${files.length} files`,
          contextValue: 'stepwise.change.step',
          expanded: true,
          children,
        });
      }
    }
    return out;
  }

  private decorateSoon(): void {
    if (this.decorateTimer) clearTimeout(this.decorateTimer);
    this.decorateTimer = setTimeout(() => {
      this.decorateTimer = undefined;
      for (const editor of vscode.window.visibleTextEditors) this.decorate(editor);
    }, 150);
  }

  /** Marks the unreviewed hunks of a file the agent changed (the server's lenses above them say Keep / Undo). */
  private decorate(editor: vscode.TextEditor): void {
    const doc = editor.document;
    if (doc.uri.scheme !== 'file') return;
    const folder = vscode.workspace.getWorkspaceFolder(doc.uri);
    // A worktree session's changes are not the folder's files: they mark no editor of the folder.
    const ws = folder?.uri.toString();
    const inPlace = !!ws && this.root(ws)?.toString() === folder?.uri.toString();
    const f = ws && inPlace ? this.changes.get(ws)?.files.find((x) => x.path === vscode.workspace.asRelativePath(doc.uri, false)) : undefined;
    const added: vscode.Range[] = [];
    const removed: vscode.Range[] = [];
    if (f && !f.reviewed) {
      const reviewed = new Set((f.hunks ?? []).filter((h) => h.reviewed).map((h) => h.index));
      diffHunks(f.before ?? '', doc.getText()).forEach((h, i) => {
        if (reviewed.has(i)) return;
        if (h.count > 0) added.push(new vscode.Range(h.start, 0, h.start + h.count - 1, 0));
        else removed.push(new vscode.Range(Math.min(h.start, doc.lineCount - 1), 0, Math.min(h.start, doc.lineCount - 1), 0));
      });
    }
    editor.setDecorations(this.added, added);
    editor.setDecorations(this.removed, removed);
  }
}

export function beforeUri(workspace: string, path: string, empty = false): vscode.Uri {
  return vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${path}`, query: empty ? '' : workspace });
}

function filesOfStep(changes: Changes | undefined, step: string): string[] {
  return (changes?.files ?? []).filter((f) => (f.steps?.[0] ?? 'No plan step') === step).map((f) => f.path);
}
