// Plan first, the logic without `vscode`: the arguments of `stepwise.approvePlan` / `stepwise.commentPlan`
// (docs/protocol.md "Plan first") and whether a status says a plan waits for approval.
import type * as wire from '../protocol/generated';
import type { StatusParams } from './status';

export const PLAN_FIRST_COMMANDS = {
  toggle: 'stepwise.togglePlanFirst',
  approve: 'stepwise.approvePlanNow',
  approveFresh: 'stepwise.approvePlanFresh',
  comment: 'stepwise.commentOnPlan',
  commentItem: 'stepwise.planItem.comment',
} as const;

export const PLAN_FIRST_SERVER = { approve: 'stepwise.approvePlan', comment: 'stepwise.commentPlan' } as const;

/** A run ended with its plan waiting for the user. */
export function planReady(status: Pick<StatusParams, 'state' | 'reason'> | undefined): boolean {
  return status?.state === 'idle' && status.reason === 'plan_ready';
}

export function approveArguments(workspace: string, revision: number | undefined, clearContext: boolean, session?: string): [wire.ApprovePlanArgs] {
  const arg: wire.ApprovePlanArgs = { workspace, ...(session ? { session } : {}), clearContext };
  if (Number.isInteger(revision)) arg.baseRevision = revision;
  return [arg];
}

/** One comment, on an item (`id`) or the whole plan; `undefined` for an empty one. */
export function commentArguments(workspace: string, text: string | undefined, id?: string, session?: string): [wire.CommentPlanArgs] | undefined {
  const t = (text ?? '').trim();
  if (!t) return undefined;
  return [{ workspace, ...(session ? { session } : {}), comments: [id === undefined ? { text: t } : { id, text: t }] }];
}

/** The Conversation view's plan buttons. */
export const PLAN_ACTIONS = ['approve', 'approveFresh', 'comment'] as const;
export type PlanAction = (typeof PLAN_ACTIONS)[number];

/**
 * What a plan button of the Conversation view runs: the extension's command (the one of the message and the
 * plan view's title) with the folder shown, and for a comment the text typed in the view (none: an input box
 * asks). `undefined` for anything else a message names.
 */
export function planActionCommand(workspace: string | undefined, action: unknown, text?: unknown): { command: string; args: unknown[] } | undefined {
  if (!workspace || !PLAN_ACTIONS.includes(action as PlanAction)) return undefined;
  if (action === 'approve') return { command: PLAN_FIRST_COMMANDS.approve, args: [workspace] };
  if (action === 'approveFresh') return { command: PLAN_FIRST_COMMANDS.approveFresh, args: [workspace] };
  const t = typeof text === 'string' ? text.trim() : '';
  return { command: PLAN_FIRST_COMMANDS.comment, args: t ? [workspace, t] : [workspace] };
}
