// The status-bar item: run state + plan progress + running background tasks. Pure logic: no `vscode` import.
import { planCounts, planSummary, type PlanParams } from './plan';
import { EXTENSION_COMMANDS } from './commands';
import { mcpStatus, type McpServer } from './mcp';

import type * as wire from '../protocol/generated';

export type RunStateName = wire.RunState;

/** `stepwise/status` as read: `wire.StatusParams`, with a run id, state or reason of another shape tolerated (and
 * no `session` from a server before sessions: the folder's own). */
export type StatusParams = Omit<wire.StatusParams, 'session' | 'state' | 'runId' | 'reason' | 'errorKind'> & {
  session?: string;
  state: RunStateName | string;
  runId?: string;
  reason?: wire.FinishReason | string;
  /** What failed, for `error`: `setup` (the fix is in the settings), `model`, `internal`. */
  errorKind?: wire.ErrorKind | string;
};

/** Whether a failed run needs the settings fixed: the server says so; older servers only give the text. */
export function isSetupError(p: Pick<StatusParams, 'message' | 'errorKind'>): boolean {
  if (p.errorKind) return p.errorKind === 'setup';
  return /model|api[ _-]?key|unauthori[sz]ed|401|403|base ?url|not configured/i.test(p.message ?? '');
}

/** `stepwise/usage` as read: `wire.UsageParams`, each count possibly missing (older servers). */
export type UsageParams = Pick<wire.UsageParams, 'workspace'> & Partial<Omit<wire.UsageParams, 'workspace'>>;

/** `stepwise/compacted` as read: `wire.CompactedParams`, the counts possibly missing. */
export type CompactedParams = Pick<wire.CompactedParams, 'workspace'> & Partial<Omit<wire.CompactedParams, 'workspace'>>;

/** The share of the context window the latest prompt used, in percent. */
export function contextPercent(u: UsageParams | undefined): number | undefined {
  if (!u?.contextWindow || u.contextTokens === undefined) return undefined;
  return Math.round((100 * Number(u.contextTokens)) / Number(u.contextWindow));
}

/** The share of the latest prompt read from the provider's cache, in percent. */
export function cacheShare(u: UsageParams | undefined): number | undefined {
  if (!u?.inputTokens || u.cacheReadTokens === undefined) return undefined;
  return Math.round((100 * Number(u.cacheReadTokens)) / Number(u.inputTokens));
}

/** `Context: 24k of 200k tokens (12%) · 85% of the prompt from the cache` */
export function contextLine(u: UsageParams | undefined): string | undefined {
  const pct = contextPercent(u);
  if (pct === undefined || !u) return undefined;
  const cache = cacheShare(u);
  const cached = cache !== undefined && cache > 0 ? ` · ${cache}% of the prompt from the cache` : '';
  return `Context: ${formatTokens(u.contextTokens)} of ${formatTokens(u.contextWindow)} tokens (${pct}%)${cached}`;
}

/** `Compacted the conversation: 150k → 20k tokens; the plan is kept` */
export function compactedLine(c: CompactedParams): string {
  const base = `Compacted the conversation: ${formatTokens(c.tokensBefore)} → ${formatTokens(c.tokensAfter)} tokens; the plan is kept`;
  return c.summaryError ? `${base} (no summary: ${c.summaryError})` : base;
}

export interface StatusBarModel {
  text: string;
  tooltip: string;
  command: string;
  /** Whether a run is going on (clicking cancels it). */
  busy: boolean;
  severity?: 'error' | 'warning';
}

export function formatTokens(n: number | undefined): string {
  const v = Number(n ?? 0);
  if (!Number.isFinite(v)) return '0';
  if (v >= 1_000_000) return `${(v / 1_000_000).toFixed(1)}M`;
  if (v >= 10_000) return `${Math.round(v / 1000)}k`;
  if (v >= 1000) return `${(v / 1000).toFixed(1)}k`;
  return String(Math.round(v));
}

export function usageText(u: UsageParams | undefined): string | undefined {
  if (!u) return undefined;
  const i = u.runInputTokens ?? u.inputTokens;
  const o = u.runOutputTokens ?? u.outputTokens;
  if (i === undefined && o === undefined) return undefined;
  return `${formatTokens(i)} in / ${formatTokens(o)} out`;
}

/** The run's tokens so far (input + output), if known. */
export function totalTokens(u: UsageParams | undefined): number | undefined {
  if (!u) return undefined;
  const i = u.runInputTokens ?? u.inputTokens;
  const o = u.runOutputTokens ?? u.outputTokens;
  if (i === undefined && o === undefined) return undefined;
  return Number(i ?? 0) + Number(o ?? 0);
}

/** `1 background task`, `2 background tasks`; undefined when none runs (the status bar says nothing then). */
export function backgroundText(running: number | undefined): string | undefined {
  const n = Number(running ?? 0);
  if (!Number.isFinite(n) || n <= 0) return undefined;
  return `${n} background task${n === 1 ? '' : 's'}`;
}

const REASONS: Record<string, string> = {
  end_turn: 'done',
  cancelled: 'cancelled',
  error: 'error',
  loop_detected: 'stopped: loop detected',
  max_rounds: 'stopped: max rounds',
  max_tokens: 'stopped: output limit',
  plan_ready: 'plan ready',
};

export function statusBarModel(
  status: StatusParams | undefined,
  plan: PlanParams | undefined,
  usage?: UsageParams,
  folderName?: string,
  compacted?: CompactedParams,
  mcp?: McpServer[],
  background = 0,
): StatusBarModel {
  const { completed, total } = planCounts(plan);
  const progress = total > 0 ? ` ${completed}/${total}` : '';
  const where = folderName ? ` (${folderName})` : '';
  const tokens = usageText(usage);
  const tip: string[] = [];
  const state = status?.state;
  let text: string;
  let busy = false;
  let severity: StatusBarModel['severity'];
  if (state === 'running') {
    busy = true;
    text = `$(sync~spin) stepwise: running${progress}`;
    tip.push(`Stepwise is running${where}. Click to cancel.`);
  } else if (state === 'waiting') {
    busy = true;
    text = `$(bell) stepwise: waiting${progress}`;
    tip.push(`Stepwise is waiting for your approval${where}. Click to cancel the run.`);
    severity = 'warning';
  } else {
    const reason = status?.reason;
    const word = reason ? REASONS[reason] ?? reason : undefined;
    if (reason === 'cancelled') text = `$(circle-slash) stepwise: cancelled${progress}`;
    else if (reason === 'error') {
      text = `$(error) stepwise: error${progress}`;
      severity = 'error';
    } else if (reason === 'loop_detected' || reason === 'max_rounds' || reason === 'max_tokens') {
      text = `$(warning) stepwise: idle${progress}`;
      severity = 'warning';
    } else text = `$(checklist) stepwise: idle${progress}`;
    tip.push(`Stepwise is idle${where}${word ? ` (last run: ${word})` : ''}. Click to show the plan.`);
    if (status?.message) tip.push(status.message);
  }
  const used = totalTokens(usage);
  if (used !== undefined) text += ` · ${formatTokens(used)} tok`;
  const pct = contextPercent(usage);
  if (pct !== undefined) text += ` · ctx ${pct}%`;
  if (total > 0) tip.push(`Plan: ${planSummary(plan)}`);
  if (tokens) tip.push(`Tokens this run: ${tokens}`);
  const ctx = contextLine(usage);
  if (ctx) tip.push(ctx);
  if (compacted) tip.push(compactedLine(compacted));
  const tasks = backgroundText(background);
  if (tasks) {
    text += ` · ${tasks}`;
    tip.push(`${tasks[0].toUpperCase()}${tasks.slice(1)} running${where} (listed in the Conversation view).`);
  }
  const servers = mcpStatus(mcp);
  if (servers) {
    text += servers.text;
    tip.push(...servers.tooltip);
    severity ??= 'warning';
  }
  return { text, tooltip: tip.join('\n'), command: busy ? EXTENSION_COMMANDS.cancelRun : EXTENSION_COMMANDS.showPlan, busy, severity };
}
