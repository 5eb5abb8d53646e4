// Plan first, the logic without `vscode`: the arguments of `stepwise.approvePlan` / `stepwise.commentPlan`
// (docs/protocol.md "Plan first") and whether a status says a plan waits for approval.
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

export function approveArguments(workspace: string, revision: number | undefined, clearContext: boolean): unknown[] {
  const arg: Record<string, unknown> = { workspace, clearContext };
  if (Number.isInteger(revision)) arg.baseRevision = revision;
  return [arg];
}

/** One comment, on an item (`id`) or the whole plan; `undefined` for an empty one. */
export function commentArguments(workspace: string, text: string | undefined, id?: string): unknown[] | undefined {
  const t = (text ?? '').trim();
  if (!t) return undefined;
  return [{ workspace, comments: [id === undefined ? { text: t } : { id, text: t }] }];
}
