// The user edits the plan: items in place in the plan view (text, add after, delete, move, status), or the
// whole plan as a text document in its render form (scheme `stepwise-plan`), applied on save. Both go to the
// server as `stepwise.editPlan` with the revision they were made on; a broken rule or a stale revision is
// shown and changes nothing.
import * as vscode from 'vscode';

import type { Connection } from '../connection/client';
import { PLAN_COMMANDS, SERVER_COMMANDS } from '../model/commands';
import { Core, errorText, folderName, pickFolder } from '../setup/core';
import type { PlanNode, PlanParams } from '../model/plan';
import { documentPlanText, editErrorMessage, editItems, editPlanArguments, renderPlan, type EditItem, type EditKind } from '../model/planEdit';

export const PLAN_SCHEME = 'stepwise-plan';

/** The plan of each folder as a file: `stepwise-plan:/<folder name>/Plan?<folder uri>`. */
class PlanFiles implements vscode.FileSystemProvider {
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;
  /** The plan's revision each open document was read at: its edits are made on that revision. */
  private readonly revisions = new Map<string, number | undefined>();
  private readonly mtimes = new Map<string, number>();

  constructor(
    private readonly core: Core,
    private readonly apply: (workspace: string, edit: { text: string }, baseRevision: number | undefined) => Promise<PlanParams>,
  ) {}

  static uri(workspace: string): vscode.Uri {
    return vscode.Uri.from({ scheme: PLAN_SCHEME, path: `/${folderName(workspace)}/Plan`, query: workspace });
  }

  private content(uri: vscode.Uri): Uint8Array {
    return new TextEncoder().encode(renderPlan(this.core.folders.plan(uri.query)));
  }

  /** The folder's plan changed: open documents that the user has not changed show the new plan. */
  planChanged(workspace: string): void {
    const uri = PlanFiles.uri(workspace);
    if (!this.revisions.has(uri.toString())) return;
    // Strictly later, so VS Code sees a new version even within one millisecond.
    this.mtimes.set(uri.toString(), Math.max(Date.now(), (this.mtimes.get(uri.toString()) ?? 0) + 1));
    this.changed.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    if (!uri.query) throw vscode.FileSystemError.FileNotFound(uri);
    const mtime = this.mtimes.get(uri.toString()) ?? 0;
    return { type: vscode.FileType.File, ctime: 0, mtime, size: this.content(uri).byteLength };
  }

  readFile(uri: vscode.Uri): Uint8Array {
    if (!uri.query) throw vscode.FileSystemError.FileNotFound(uri);
    this.revisions.set(uri.toString(), this.core.folders.plan(uri.query)?.revision);
    return this.content(uri);
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    if (!uri.query) throw vscode.FileSystemError.FileNotFound(uri);
    const text = documentPlanText(new TextDecoder().decode(content));
    try {
      const result = await this.apply(uri.query, { text }, this.revisions.get(uri.toString()));
      this.revisions.set(uri.toString(), result.revision);
    } catch (error) {
      // The document stays as the user wrote it (dirty), with the reason in the save error.
      throw vscode.FileSystemError.Unavailable(editErrorMessage(errorText(error)));
    }
  }

  /** A plan document was saved: when the server keeps the plan otherwise (new items got ids), show that. */
  saved(doc: vscode.TextDocument): void {
    if (doc.uri.scheme !== PLAN_SCHEME || !doc.uri.query) return;
    if (doc.getText() !== renderPlan(this.core.folders.plan(doc.uri.query))) this.planChanged(doc.uri.query);
  }

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }
  readDirectory(): [string, vscode.FileType][] {
    return [];
  }
  createDirectory(): void {
    throw vscode.FileSystemError.NoPermissions('the plan has no folders');
  }
  delete(): void {
    throw vscode.FileSystemError.NoPermissions('clear the plan with Stepwise: New Session');
  }
  rename(): void {
    throw vscode.FileSystemError.NoPermissions('the plan cannot be renamed');
  }
}

const ITEM_EDITS: [string, EditKind][] = [
  [PLAN_COMMANDS.deleteItem, 'delete'],
  [PLAN_COMMANDS.moveUp, 'up'],
  [PLAN_COMMANDS.moveDown, 'down'],
  [PLAN_COMMANDS.markPending, 'pending'],
  [PLAN_COMMANDS.markInProgress, 'in_progress'],
  [PLAN_COMMANDS.markDone, 'completed'],
];

export class PlanEditor {
  private readonly files: PlanFiles;

  constructor(
    private readonly core: Core,
    private readonly connection: Connection,
  ) {
    this.files = new PlanFiles(core, (ws, edit, base) => this.send(ws, edit, base));
    const cmd = (id: string, fn: (...args: any[]) => unknown) => core.disposables.push(vscode.commands.registerCommand(id, fn));
    core.disposables.push(
      vscode.workspace.registerFileSystemProvider(PLAN_SCHEME, this.files, { isCaseSensitive: true }),
      // After VS Code has taken the saved version's stat: a change event then makes it read the plan again.
      vscode.workspace.onDidSaveTextDocument((doc) => this.files.saved(doc)),
    );
    cmd(PLAN_COMMANDS.editText, (n?: PlanNode) => this.editText(n));
    cmd(PLAN_COMMANDS.addAfter, (n?: PlanNode) => this.addAfter(n));
    for (const [id, kind] of ITEM_EDITS) cmd(id, (n?: PlanNode) => this.editItem(n, kind));
    cmd(PLAN_COMMANDS.editAsText, (n?: PlanNode) => this.openDocument(n?.workspace));
  }

  /** A plan arrived: documents of that folder follow it. */
  planChanged(workspace: string): void {
    this.files.planChanged(workspace);
  }

  /** The plan item a command is about, as the plan has it now. */
  private itemOf(n: PlanNode | undefined): { workspace: string; id: string; text: string } | undefined {
    if (!n || n.kind !== 'item') {
      void vscode.window.showInformationMessage('stepwise: pick an item in the plan view.');
      return undefined;
    }
    const id = n.id.slice(n.workspace.length + 1);
    const item = this.core.folders.plan(n.workspace)?.items.find((i) => String(i.id) === id);
    return item ? { workspace: n.workspace, id, text: String(item.text ?? '') } : undefined;
  }

  private async editText(n: PlanNode | undefined): Promise<void> {
    const item = this.itemOf(n);
    if (!item) return;
    const text = await vscode.window.showInputBox({
      title: 'Stepwise: Edit Plan Item',
      value: item.text,
      prompt: 'The new text of the step; the agent is told of the change.',
      validateInput: (v) => (v.trim() ? undefined : 'A step needs a text'),
    });
    if (text !== undefined) await this.editItem(n, 'text', text);
  }

  private async addAfter(n: PlanNode | undefined): Promise<void> {
    if (!this.itemOf(n)) return;
    const text = await vscode.window.showInputBox({
      title: 'Stepwise: Add Plan Item',
      prompt: 'A new step after this one; the agent is told of the change.',
      validateInput: (v) => (v.trim() ? undefined : 'A step needs a text'),
    });
    if (text !== undefined) await this.editItem(n, 'addAfter', text);
  }

  private async editItem(n: PlanNode | undefined, kind: EditKind, text?: string): Promise<void> {
    const item = this.itemOf(n);
    if (!item) return;
    const plan = this.core.folders.plan(item.workspace);
    const items = editItems(plan?.items ?? [], item.id, kind, text);
    if (!items) return;
    try {
      await this.send(item.workspace, { items }, plan?.revision);
    } catch (error) {
      void vscode.window.showErrorMessage(editErrorMessage(errorText(error)));
    }
  }

  /** Sends an edit; the result is the plan as the server now keeps it. Throws the server's error. */
  private async send(workspace: string, edit: { items?: EditItem[]; text?: string }, baseRevision: number | undefined): Promise<PlanParams> {
    const client = await this.connection.ensureClient(true);
    if (!client) throw new Error('the server is not running');
    const result = (await this.core.execute(client, SERVER_COMMANDS.editPlan, editPlanArguments(workspace, edit, baseRevision))) as PlanParams | null;
    if (!result || !Array.isArray(result.items)) throw new Error('the server answered stepwise.editPlan with no plan');
    const known = this.core.folders.plan(workspace)?.revision;
    // The `stepwise/plan` of this edit (or a later change) may have come first.
    if (known === undefined || result.revision === undefined || result.revision > known)
      this.connection.events.onPlan({ ...result, workspace, by: 'user', change: 'edit' });
    return result;
  }

  /** Stepwise: Edit Plan as Text: the folder's plan as a document in its render form, applied on save. */
  private async openDocument(workspace: string | undefined): Promise<void> {
    const ws = workspace ?? (await pickFolder(undefined, 'Edit the plan of which folder?'))?.uri;
    if (!ws) return;
    if (!(await this.connection.ensureClient(true))) return;
    const doc = await vscode.workspace.openTextDocument(PlanFiles.uri(ws));
    await vscode.window.showTextDocument(doc, { preview: false });
  }
}
