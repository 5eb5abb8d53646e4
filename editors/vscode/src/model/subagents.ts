// Child agents (the `task` tool, issue 48) as the Conversation view shows them: each on the card of the `task` call
// that made it, its state from `stepwise/subagent` live, or after a reload from that call's saved entry (its
// summary `<agent>: <description>`, its result's last line `(subagent sa-<n>: <rounds> rounds, <tokens> tokens,
// <how it ended>)`, docs/protocol.md "Subagents"), its own calls and text under it. Pure logic: no `vscode`, no
// DOM; it knows entries only by the shape it needs (conversation.ts holds them and imports this).

import type * as wire from '../protocol/generated';
import { formatTokens } from './status';

export type SubagentState = wire.SubagentState;

/** A child as its card shows it: the parts of `stepwise/subagent` that are the child's own. */
export type SubagentInfo = Pick<
  wire.SubagentParams,
  'id' | 'description' | 'agent' | 'state' | 'rounds' | 'lastTool' | 'tokens'
>;

/** `stepwise/subagent` as the view reads it: any part possibly missing. */
export type SubagentEvent = Partial<wire.SubagentParams>;

const STATES: readonly SubagentState[] = ['running', 'done', 'failed', 'cancelled'];
const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);

/** The child a `stepwise/subagent` notification tells of (none without its id). */
export function subagentOf(p: SubagentEvent): SubagentInfo | undefined {
  if (!p || typeof p.id !== 'string' || !p.id) return undefined;
  return {
    id: p.id,
    description: String(p.description ?? ''),
    agent: String(p.agent ?? 'general'),
    state: STATES.includes(p.state as SubagentState) ? (p.state as SubagentState) : 'running',
    rounds: count(p.rounds),
    ...(typeof p.lastTool === 'string' && p.lastTool ? { lastTool: p.lastTool } : {}),
    tokens: count(p.tokens),
  };
}

/** The contract's last line of a `task` result: the child's id, rounds, tokens and how it ended. */
export function endLine(output: string | undefined): { id: string; rounds: number; tokens: number; how: string } | undefined {
  const m = /\(subagent (sa-\d+): (\d+) rounds, (\d+) tokens, ([^\n]*)\)\s*$/.exec(output ?? '');
  return m ? { id: m[1], rounds: Number(m[2]), tokens: Number(m[3]), how: m[4] } : undefined;
}

/** The state the end line's words say: stopped (alone or with its parent), failed, else done (a limit reached is done). */
export function stateOf(how: string): SubagentState {
  if (/\bcancelled\b/.test(how)) return 'cancelled';
  if (/^it failed\b/.test(how)) return 'failed';
  return 'done';
}

/** A saved `task` call's child: from its summary and its result (none when neither names one). */
export function savedSubagent(summary: string | undefined, output: string | undefined, id: string | undefined): SubagentInfo | undefined {
  const end = endLine(output);
  const childId = end?.id ?? id;
  if (!childId) return undefined;
  const s = summary ?? '';
  const colon = s.indexOf(': ');
  return {
    id: childId,
    agent: colon > 0 ? s.slice(0, colon) : 'general',
    description: colon > 0 ? s.slice(colon + 2) : s,
    // A call saved without its result was cut short with its run.
    state: end ? stateOf(end.how) : 'failed',
    rounds: end?.rounds ?? 0,
    tokens: end?.tokens ?? 0,
  };
}

/** What folding needs of an entry. */
interface Foldable<E> {
  subagent?: string;
  tool?: { name: string; summary?: string; output?: string; subagent?: SubagentInfo; children?: E[] };
}

/**
 * `stepwise.conversation`'s entries with each child's (marked `subagent`, right after the `task` call that made
 * it) moved under that call: the list the view draws has the parent's entries only. A child's entry with no
 * `task` call before it is dropped (it belongs to no card).
 */
export function foldChildren<E extends Foldable<E>>(list: E[]): E[] {
  const out: E[] = [];
  let owner: E | undefined;
  for (const e of list) {
    if (!e.subagent) {
      out.push(e);
      if (e.tool?.name === 'task') owner = e;
      continue;
    }
    const t = owner?.tool;
    if (!t) continue;
    t.subagent ??= savedSubagent(t.summary, t.output, e.subagent);
    (t.children ??= []).push(e);
  }
  for (const e of out) if (e.tool?.name === 'task' && !e.tool.subagent) e.tool.subagent = savedSubagent(e.tool.summary, e.tool.output, undefined);
  return out;
}

/** The card's line about its child: `sa-1 · 3 rounds · 1.2k tokens` (its agent and description are the call's summary). */
export function subagentLine(s: SubagentInfo): string {
  return [s.id, `${s.rounds} ${s.rounds === 1 ? 'round' : 'rounds'}`, `${formatTokens(s.tokens)} tokens`].join(' · ');
}

/** The child's latest call, as its card shows it while it runs: the newest of its calls the view has (its tool and
 * command or path), else the tool `stepwise/subagent` named. */
export function latestCall(children: readonly { tool?: { name: string; summary?: string } }[] | undefined, lastTool: string | undefined): string | undefined {
  for (let i = (children?.length ?? 0) - 1; i >= 0; i--) {
    const t = children?.[i].tool;
    if (t) return t.summary ? `${t.name} ${t.summary}` : t.name;
  }
  return lastTool;
}
