// Plan first in VS Code: the "Plan First" toggle (the `stepwise.planFirst` setting, which the server reads),
// and, when a run ends `plan_ready`, Approve / Approve with Fresh Context / Comment: as buttons of a message
// and on the plan view's title (context key `stepwise.planReady`), and a comment per item from its menu.
import * as vscode from 'vscode';

import type { Connection } from '../connection/client';
import { Core, errorText, folderName, pickFolder } from '../setup/core';
import type { PlanNode } from '../model/plan';
import { approveArguments, commentArguments, PLAN_FIRST_COMMANDS, PLAN_FIRST_SERVER, planReady } from '../model/planFirstArgs';

const APPROVE = 'Approve';
const APPROVE_FRESH = 'Approve with Fresh Context';
const COMMENT = 'Comment';

export class PlanFirst {
  /** Folders whose plan waits for approval. */
  private readonly waiting = new Set<string>();

  constructor(
    private readonly core: Core,
    private readonly connection: Connection,
  ) {
    const cmd = (id: string, fn: (...args: any[]) => unknown) => core.disposables.push(vscode.commands.registerCommand(id, fn));
    cmd(PLAN_FIRST_COMMANDS.toggle, () => this.toggle());
    // The Conversation view's buttons name the folder (and a comment's text); the palette and menus do not.
    const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
    cmd(PLAN_FIRST_COMMANDS.approve, (ws?: unknown) => this.approve(str(ws), false));
    cmd(PLAN_FIRST_COMMANDS.approveFresh, (ws?: unknown) => this.approve(str(ws), true));
    cmd(PLAN_FIRST_COMMANDS.comment, (ws?: unknown, text?: unknown) => this.comment(undefined, str(ws), str(text)));
    cmd(PLAN_FIRST_COMMANDS.commentItem, (n?: PlanNode) => this.comment(n));
  }

  /** After every `stepwise/status`: a plan that became ready is offered for approval. */
  statusChanged(workspace: string): void {
    const status = this.core.folders.ensure(workspace).status;
    const was = this.waiting.has(workspace);
    if (planReady(status)) this.waiting.add(workspace);
    else if (status?.state !== 'idle') this.waiting.delete(workspace);
    void vscode.commands.executeCommand('setContext', 'stepwise.planReady', this.waiting.size > 0);
    if (!was && this.waiting.has(workspace)) void this.offer(workspace);
  }

  private async offer(workspace: string): Promise<void> {
    const pick = await vscode.window.showInformationMessage(
      `stepwise: the plan for ${folderName(workspace)} is ready; nothing has changed yet.`,
      APPROVE,
      APPROVE_FRESH,
      COMMENT,
    );
    if (pick === APPROVE || pick === APPROVE_FRESH) await this.approve(workspace, pick === APPROVE_FRESH);
    else if (pick === COMMENT) await this.comment(undefined, workspace);
  }

  private async toggle(): Promise<void> {
    const config = vscode.workspace.getConfiguration('stepwise');
    const on = !config.get<boolean>('planFirst', false);
    const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    await config.update('planFirst', on, target);
    void vscode.window.showInformationMessage(
      on ? 'stepwise: Plan First is on: each task is planned read-only and waits for your approval.' : 'stepwise: Plan First is off.',
    );
  }

  private async folder(workspace: string | undefined): Promise<string | undefined> {
    if (workspace) return workspace;
    if (this.waiting.size === 1) return [...this.waiting][0];
    return (await pickFolder(undefined, 'The plan of which folder?'))?.uri;
  }

  private async approve(workspace: string | undefined, fresh: boolean): Promise<void> {
    const ws = await this.folder(workspace);
    if (!ws) return;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const revision = this.core.folders.plan(ws)?.revision;
    try {
      await this.core.execute(client, PLAN_FIRST_SERVER.approve, approveArguments(ws, revision, fresh));
      this.waiting.delete(ws);
      void vscode.commands.executeCommand('setContext', 'stepwise.planReady', this.waiting.size > 0);
    } catch (error) {
      void vscode.window.showErrorMessage(`stepwise: the plan was not approved: ${errorText(error)}`);
    }
  }

  /** A comment on one item (from its menu) or on the whole plan: one more planning round. */
  private async comment(n: PlanNode | undefined, workspace?: string, typed?: string): Promise<void> {
    const item = n?.kind === 'item' ? n.id.slice(n.workspace.length + 1) : undefined;
    const ws = n?.workspace ?? (await this.folder(workspace));
    if (!ws) return;
    const text = typed?.trim() ? typed : await vscode.window.showInputBox({
      title: item ? `Stepwise: Comment on Step #${item}` : 'Stepwise: Comment on the Plan',
      prompt: 'The model revises the plan with your comment; nothing changes until you approve.',
      validateInput: (v) => (v.trim() ? undefined : 'A comment needs a text'),
    });
    const args = commentArguments(ws, text, item);
    if (!args) return;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    try {
      await this.core.execute(client, PLAN_FIRST_SERVER.comment, args);
      this.waiting.delete(ws);
    } catch (error) {
      void vscode.window.showErrorMessage(`stepwise: the comment was not sent: ${errorText(error)}`);
    }
  }
}
