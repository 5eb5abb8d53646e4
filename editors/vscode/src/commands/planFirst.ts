// Plan first in VS Code: the "Plan First" toggle (the `stepwise.planFirst` setting, which the server reads),
// and, when a run ends `plan_ready`, Approve / Approve with Fresh Context / Comment: as buttons of a message
// and on the plan view's title (context key `stepwise.planReady`), and a comment per item from its menu. Each
// session of a folder has its own plan: the message names the session it is about, and answers that one.
import * as vscode from 'vscode';

import type { Connection } from '../connection/client';
import { Core, errorText, folderName, pickFolder } from '../setup/core';
import type { PlanNode } from '../model/plan';
import { approveArguments, commentArguments, PLAN_FIRST_COMMANDS, PLAN_FIRST_SERVER, planReady } from '../model/planFirstArgs';
import { MAIN, sessionKey } from '../model/sessions';

const APPROVE = 'Approve';
const APPROVE_FRESH = 'Approve with Fresh Context';
const COMMENT = 'Comment';

export class PlanFirst {
  /** Sessions whose plan waits for approval, by `sessionKey`. */
  private readonly waiting = new Map<string, { ws: string; session: string }>();

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

  /** After every `stepwise/status` of a session: a plan that became ready is offered for approval. */
  statusChanged(workspace: string, session: string): void {
    const key = sessionKey(workspace, session);
    const status = this.core.folders.ensure(workspace, session).status;
    const was = this.waiting.has(key);
    if (planReady(status)) this.waiting.set(key, { ws: workspace, session });
    else if (status?.state !== 'idle') this.waiting.delete(key);
    void vscode.commands.executeCommand('setContext', 'stepwise.planReady', this.waiting.size > 0);
    if (!was && this.waiting.has(key)) void this.offer(workspace, session);
  }

  private async offer(workspace: string, session: string): Promise<void> {
    const of = session === MAIN ? folderName(workspace) : `${this.core.sessionName(workspace, session)} of ${folderName(workspace)}`;
    const pick = await vscode.window.showInformationMessage(`stepwise: the plan for ${of} is ready; nothing has changed yet.`, APPROVE, APPROVE_FRESH, COMMENT);
    if (pick === APPROVE || pick === APPROVE_FRESH) await this.approve(workspace, pick === APPROVE_FRESH, session);
    else if (pick === COMMENT) await this.comment(undefined, workspace, undefined, session);
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

  /** The plan a command is about: the session given, else the folder's session in view (the folder given, the
   * only one waiting, or asked). */
  private async folder(workspace: string | undefined, session?: string): Promise<{ ws: string; session: string } | undefined> {
    const only = this.waiting.size === 1 ? [...this.waiting.values()][0] : undefined;
    if (!workspace && only) return { ws: only.ws, session: session ?? only.session };
    const ws = workspace ?? (await pickFolder(undefined, 'The plan of which folder?'))?.uri;
    return ws ? { ws, session: session ?? this.core.folders.viewed(ws) } : undefined;
  }

  private async approve(workspace: string | undefined, fresh: boolean, session?: string): Promise<void> {
    const t = await this.folder(workspace, session);
    if (!t) return;
    const ws = t.ws;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    const revision = this.core.folders.get(ws, t.session)?.plan?.revision;
    try {
      await this.core.execute(client, PLAN_FIRST_SERVER.approve, approveArguments(ws, revision, fresh, t.session));
      this.waiting.delete(sessionKey(ws, t.session));
      void vscode.commands.executeCommand('setContext', 'stepwise.planReady', this.waiting.size > 0);
    } catch (error) {
      void vscode.window.showErrorMessage(`stepwise: the plan was not approved: ${errorText(error)}`);
    }
  }

  /** A comment on one item (from its menu) or on the whole plan: one more planning round. */
  private async comment(n: PlanNode | undefined, workspace?: string, typed?: string, session?: string): Promise<void> {
    const item = n?.kind === 'item' ? n.id.slice(n.workspace.length + 1) : undefined;
    const t = await this.folder(n?.workspace ?? workspace, session);
    if (!t) return;
    const ws = t.ws;
    const text = typed?.trim() ? typed : await vscode.window.showInputBox({
      title: item ? `Stepwise: Comment on Step #${item}` : 'Stepwise: Comment on the Plan',
      prompt: 'The model revises the plan with your comment; nothing changes until you approve.',
      validateInput: (v) => (v.trim() ? undefined : 'A comment needs a text'),
    });
    const args = commentArguments(ws, text, item, t.session);
    if (!args) return;
    const client = await this.connection.ensureClient(true);
    if (!client) return;
    try {
      await this.core.execute(client, PLAN_FIRST_SERVER.comment, args);
      this.waiting.delete(sessionKey(ws, t.session));
    } catch (error) {
      void vscode.window.showErrorMessage(`stepwise: the comment was not sent: ${errorText(error)}`);
    }
  }
}
