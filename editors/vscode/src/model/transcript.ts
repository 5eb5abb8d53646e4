// Lines of the live transcript (output channel "Stepwise"). Pure logic: no `vscode` import.
import type * as wire from '../protocol/generated';
import type { UsageParams } from './status';
import { formatTokens } from './status';
import { planSummary, type PlanParams } from './plan';

/** `stepwise/toolCall` as the transcript reads it: `wire.ToolCallParams`, only its workspace, name and phase
 * needed. */
export type ToolCallParams = Pick<wire.ToolCallParams, 'workspace' | 'name'> &
  Partial<Omit<wire.ToolCallParams, 'phase'>> & { phase: wire.Phase | string };

const MAX_OUTPUT_LINES = 8;

/** Indents a tool's output, cut to a few lines. */
export function shortOutput(output: string | undefined, maxLines = MAX_OUTPUT_LINES): string[] {
  if (output === undefined || output === null) return [];
  const lines = String(output).replace(/\s+$/, '').split(/\r?\n/);
  const shown = lines.slice(0, maxLines).map((l) => `    ${l}`);
  if (lines.length > maxLines) shown.push(`    … (${lines.length - maxLines} more lines)`);
  return shown;
}

export function toolCallLines(p: ToolCallParams): string[] {
  const summary = p.summary ? ` ${p.summary}` : '';
  // A child's calls (`task`) are indented under its call and name it.
  const by = p.subagent ? `  [${p.subagent}] ` : '';
  if (p.phase === 'started') return [`${by}▶ ${p.name}${summary}`];
  const mark = p.isError ? '✗' : '✓';
  return [`${by}  ${mark} ${p.name}${p.isError ? ' failed' : ''}`, ...shortOutput(p.output).map((l) => `${by ? '  ' : ''}${l}`)];
}

/** A child's end (`stepwise/subagent` not `running`): `  [sa-1] cancelled: 2 rounds, 1.2k tokens`; none while it runs. */
export function subagentEndLine(p: Partial<wire.SubagentParams>): string | undefined {
  if (!p?.id || !p.state || p.state === 'running') return undefined;
  return `  [${p.id}] ${p.state}: ${p.rounds ?? 0} rounds, ${formatTokens(Number(p.tokens ?? 0))} tokens`;
}

export function reminderLine(text: string): string {
  return `⚑ reminder: ${text}`;
}

export function usageLine(u: UsageParams): string {
  const round = `${formatTokens(u.inputTokens)} in / ${formatTokens(u.outputTokens)} out`;
  const run = `${formatTokens(u.runInputTokens)} in / ${formatTokens(u.runOutputTokens)} out`;
  return `· tokens: ${round} (run: ${run})`;
}

export function runStartLine(prompt: string | undefined, folderName: string | undefined, runId?: string): string {
  const where = folderName ? ` in ${folderName}` : '';
  const id = runId ? ` [${runId}]` : '';
  return `━━ stepwise run${where}${id}: ${prompt ?? ''}`.trimEnd();
}

export function runEndLine(reason: string | undefined, message: string | undefined, usage: UsageParams | undefined, plan: PlanParams | undefined): string {
  const parts = [`━━ run ended: ${reason ?? 'idle'}`];
  if (message) parts.push(message);
  if (plan && (plan.items?.length ?? 0) > 0) parts.push(`plan ${planSummary(plan)}`);
  if (usage) parts.push(`tokens ${formatTokens(usage.runInputTokens)} in / ${formatTokens(usage.runOutputTokens)} out`);
  return parts.join(' · ');
}

/**
 * Streams assistant text into line-oriented output: remembers whether the channel is mid-line so that the
 * next structured line starts on a fresh one.
 */
export class TranscriptWriter {
  private midLine = false;
  constructor(private readonly sink: { append(s: string): void }) {}

  text(chunk: string): void {
    if (!chunk) return;
    this.sink.append(chunk);
    this.midLine = !chunk.endsWith('\n');
  }

  line(s: string): void {
    if (this.midLine) this.sink.append('\n');
    this.sink.append(s + '\n');
    this.midLine = false;
  }

  lines(ls: string[]): void {
    for (const l of ls) this.line(l);
  }
}

/** The user changed the plan: `✎ you changed the plan: 1/3 · Adding a farewell`. */
export function planEditLine(plan: PlanParams): string {
  return `✎ you changed the plan: ${planSummary(plan)}`;
}

/** The line a change of the plan not made by the model gets, as its `change` says; none for the model's
 * (its tool calls show it) nor for a reset (the new session is said where it starts). A server without
 * `change` only said `by`: its user changes read as edits. */
export function planChangeLine(plan: PlanParams): string | undefined {
  if (plan.by !== 'user') return undefined;
  switch (plan.change) {
    case 'approved':
      return `✓ you approved the plan: ${planSummary(plan)}`;
    case 'rewind':
      return `↶ the plan went back with the rewind: ${planSummary(plan)}`;
    case 'reset':
      return undefined;
    default:
      return planEditLine(plan);
  }
}
