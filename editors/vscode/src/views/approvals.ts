// The server's questions about tool calls (`stepwise/ask`) in the Conversation view: in the call's card while the
// view shows the question's session; in its session's card while the view shows another session of the folder,
// that session badged in the selector and a notification that brings it into view (so no question is lost);
// else, and once the view is closed, as VS Code's notification. A question the server withdraws (the run was
// cancelled) leaves the card; one whose run ended is marked unanswered.
import * as vscode from 'vscode';

import type { Connection } from '../connection/client';
import { questionText, type Choice, type Question } from '../model/ask';
import type { Approval, Event, Outcome } from '../model/conversation';
import { askPlace, sessionOf } from '../model/sessions';
import type { Core } from '../setup/core';

interface Pending {
  approval: Approval;
  workspace: string;
  session: string;
  resolve: (answer: Choice | undefined) => void;
}

/** What the approvals need of the view. */
export interface ApprovalHost {
  /** Whether the view shows (and can answer), its folder and the folder's session in view. */
  shown(): { visible: boolean; folder?: string; viewed: string };
  /** Adds an event to a session's conversation (read first when it was not); false when it could not be. */
  add(workspace: string, session: string, e: Event): Promise<boolean>;
  /** The sessions asking changed: the selector's badges are drawn again. */
  changed(): void;
}

export class Approvals {
  private readonly pending = new Map<number, Pending>();
  private next = 1;

  constructor(
    private readonly core: Core,
    private readonly connection: Connection,
    private readonly host: ApprovalHost,
  ) {}

  /** A question of the server, answered in the view; `undefined` when VS Code's notification asks instead. */
  ask(question: Question, token: vscode.CancellationToken): Promise<Choice | undefined> | undefined {
    const place = askPlace(question, this.host.shown());
    const ws = question.workspace;
    if (place === 'window' || !ws) return undefined;
    const session = sessionOf(question);
    const approval: Approval = { id: this.next++, question };
    return new Promise((resolve) => {
      const p: Pending = { approval, workspace: ws, session, resolve };
      this.pending.set(approval.id, p);
      token.onCancellationRequested(() => this.answer(approval.id, 'withdrawn'));
      void this.host.add(ws, session, { type: 'approval', approval }).then((added) => {
        if (!this.pending.has(approval.id)) return;
        if (!added) return void this.askInWindow(p);
        if (place === 'other') this.tellElsewhere(p);
      });
    });
  }

  /** A question of a session not in view: its tab is badged, and a notification brings it into view. */
  private tellElsewhere(p: Pending): void {
    this.host.changed();
    const name = this.core.sessionName(p.workspace, p.session);
    const t = questionText(p.approval.question);
    const show = `Show ${name}`;
    const who = t.asker ? `${name} (subagent ${t.asker})` : name;
    void vscode.window.showWarningMessage(`stepwise: ${who} asks: ${t.title}${t.code ? ` ${t.code}` : ''}`, show).then((pick) => {
      if (pick !== show || !this.pending.has(p.approval.id)) return;
      this.core.showSession(p.workspace, p.session);
      void vscode.commands.executeCommand('stepwise.conversationView.focus');
    });
  }

  /** Records what became of a question (no answer: `unanswered`) and gives the server the choice. */
  answer(id: number, outcome: Outcome | undefined): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    void this.host.add(p.workspace, p.session, { type: 'answered', id, answer: outcome ?? 'unanswered' });
    p.resolve(outcome === 'unanswered' || outcome === 'withdrawn' ? undefined : outcome);
    this.host.changed();
  }

  /** A session's run ended: its questions go unanswered. */
  ended(workspace: string, session: string): void {
    for (const p of [...this.pending.values()]) if (p.workspace === workspace && p.session === session) this.answer(p.approval.id, undefined);
  }

  /** The view went away: the questions it was showing are asked the usual way. */
  hidden(): void {
    for (const p of this.pending.values()) void this.askInWindow(p);
  }

  /** The folder's sessions with a question waiting (their tabs are badged). */
  asking(workspace: string | undefined): Set<string> {
    return new Set([...this.pending.values()].filter((p) => p.workspace === workspace).map((p) => p.session));
  }

  private async askInWindow(p: Pending): Promise<void> {
    const answer = await this.connection.askInWindow(p.approval.question);
    if (this.pending.has(p.approval.id)) this.answer(p.approval.id, answer);
  }
}
