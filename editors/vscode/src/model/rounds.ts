// The transcript as rounds: one folder's runs, each run's rounds (one per checkpoint the server took before
// it), and what happened in each round (the model's text, its tool calls), built from the server's
// notifications and from `stepwise.checkpoints` (a restarted window still lists the saved session's rounds).
// Pure logic: no `vscode` import.
import type { Checkpoint, CheckpointParams } from './checkpoints';
import type { StatusParams } from './status';
import type { ToolCallParams } from './transcript';

/** A tool call of a round. */
export interface CallEntry {
  kind: 'call';
  id: string;
  name: string;
  summary?: string;
  state: 'running' | 'done' | 'failed';
  output?: string;
}

/** The model's text between tool calls (streamed chunks joined). */
export interface TextEntry {
  kind: 'text';
  text: string;
}

export type RoundItem = CallEntry | TextEntry;

export interface RoundEntry {
  /** The checkpoint taken before the round; none when checkpoints are off (nothing to rewind to). */
  checkpoint?: string;
  round?: number;
  /** The plan step in progress when the round began. */
  step?: string;
  time?: string;
  /** What a rewind to the checkpoint puts back (the server's list; unknown until it was asked). */
  files?: string[];
  items: RoundItem[];
  /** Items left out past the cap. */
  omitted: number;
}

export interface RunEntry {
  runId: string;
  prompt?: string;
  state: 'running' | 'waiting' | 'idle';
  /** Why the run ended (`end_turn`, `cancelled`, ...); none for a run known only from the checkpoint list. */
  reason?: string;
  rounds: RoundEntry[];
}

/** Bounds, so a long session does not grow the window's memory without end. */
export const MAX_RUNS = 100;
export const MAX_ITEMS = 200;
export const MAX_TEXT = 4000;

function cut(s: string, max: number): string {
  return s.length > max ? s.slice(0, max) : s;
}

export class RoundLog {
  runs: RunEntry[] = [];

  private run(runId: string | undefined): RunEntry | undefined {
    if (!runId) return this.runs[this.runs.length - 1];
    let r = this.runs.find((x) => x.runId === runId);
    if (!r) {
      r = { runId, state: 'running', rounds: [] };
      this.runs.push(r);
      if (this.runs.length > MAX_RUNS) this.runs.splice(0, this.runs.length - MAX_RUNS);
    }
    return r;
  }

  /** The round events go to: the run's latest, or one without a checkpoint when none was taken. */
  private current(runId: string | undefined): RoundEntry | undefined {
    const r = this.run(runId);
    if (!r) return undefined;
    if (r.rounds.length === 0) r.rounds.push({ items: [], omitted: 0 });
    return r.rounds[r.rounds.length - 1];
  }

  private add(round: RoundEntry, item: RoundItem): void {
    if (round.items.length >= MAX_ITEMS) round.omitted += 1;
    else round.items.push(item);
  }

  /** `stepwise/status`; `prompt` is the task this window sent, if it started the run. */
  status(p: StatusParams, prompt?: string): void {
    if (!p?.runId) return;
    const r = this.run(p.runId);
    if (!r) return;
    if (prompt && !r.prompt) r.prompt = prompt;
    r.state = p.state === 'running' || p.state === 'waiting' ? p.state : 'idle';
    r.reason = r.state === 'idle' ? p.reason : undefined;
    if (r.state === 'idle')
      for (const round of r.rounds) for (const i of round.items) if (i.kind === 'call' && i.state === 'running') i.state = 'failed';
  }

  /** `stepwise/checkpoint`: a new round begins. */
  checkpoint(p: CheckpointParams): void {
    if (!p?.id) return;
    const r = this.run(p.runId);
    if (!r || r.rounds.some((x) => x.checkpoint === p.id)) return;
    r.rounds.push({ checkpoint: String(p.id), round: p.round, step: p.step ?? undefined, items: [], omitted: 0 });
  }

  /** `stepwise/toolCall`: `started` adds the call, `finished` completes it. */
  toolCall(p: ToolCallParams): void {
    if (!p?.name) return;
    const round = this.current(p.runId);
    if (!round) return;
    const id = String(p.id ?? '');
    const known = id ? round.items.find((i): i is CallEntry => i.kind === 'call' && i.id === id) : undefined;
    if (p.phase === 'started' || !known) {
      if (known) return;
      const state = p.phase === 'started' ? 'running' : p.isError ? 'failed' : 'done';
      this.add(round, { kind: 'call', id, name: String(p.name), summary: p.summary ?? undefined, state, output: p.output ?? undefined });
      return;
    }
    known.state = p.isError ? 'failed' : 'done';
    if (typeof p.output === 'string') known.output = p.output;
  }

  /** `stepwise/assistantText`: a chunk joins the text the round's last item holds, else starts one. */
  text(p: { runId?: string; text?: string }): void {
    if (!p?.text) return;
    const round = this.current(p.runId);
    if (!round) return;
    const last = round.items[round.items.length - 1];
    if (last?.kind === 'text') last.text = cut(last.text + p.text, MAX_TEXT);
    else this.add(round, { kind: 'text', text: cut(p.text, MAX_TEXT) });
  }

  /**
   * The server's checkpoint list (at start, after a run, after a rewind), oldest first. It wins: rounds whose
   * checkpoint it no longer has (rewound or pruned) go, its rounds are listed with their files and prompts;
   * what this window saw of a round (text, tool calls) is kept. Runs without checkpoints stay, as does the
   * run going on.
   */
  checkpoints(list: Checkpoint[]): void {
    const listed = new Set(list.map((c) => String(c.id)));
    const byRun = new Map<string, Checkpoint[]>();
    for (const c of list) {
      const runId = String(c.runId ?? '');
      if (!byRun.has(runId)) byRun.set(runId, []);
      byRun.get(runId)?.push(c);
    }
    const out: RunEntry[] = [];
    for (const [runId, cps] of byRun) {
      const old = this.runs.find((r) => r.runId === runId);
      const rounds = cps.map((c): RoundEntry => {
        const seen = old?.rounds.find((x) => x.checkpoint === String(c.id));
        return {
          checkpoint: String(c.id),
          round: c.round,
          step: c.step ?? seen?.step,
          time: c.time,
          files: Array.isArray(c.files) ? c.files.map(String) : undefined,
          items: seen?.items ?? [],
          omitted: seen?.omitted ?? 0,
        };
      });
      // Rounds this window saw without a checkpoint (none was taken), or newer than the list while the run
      // goes on, keep their place at the end.
      const live = old?.state !== undefined && old.state !== 'idle';
      for (const x of old?.rounds ?? []) if (!x.checkpoint || (live && !listed.has(x.checkpoint))) rounds.push(x);
      out.push({ runId, prompt: cps[0]?.prompt || old?.prompt, state: old?.state ?? 'idle', reason: old?.reason, rounds });
    }
    for (const r of this.runs) {
      if (byRun.has(r.runId)) continue;
      // The run going on may be newer than the list: kept whole.
      if (r.state !== 'idle') {
        out.push(r);
        continue;
      }
      const rounds = r.rounds.filter((x) => !x.checkpoint || listed.has(x.checkpoint));
      if (rounds.length > 0 && rounds.length === r.rounds.length) out.push({ ...r, rounds });
    }
    this.runs = out.slice(-MAX_RUNS);
  }

  /** A new session: the server dropped the checkpoints with the conversation. */
  clear(): void {
    this.runs = [];
  }

  /** The checkpoint before the run's first round: a rewind to it is the conversation before its prompt. */
  static firstCheckpoint(r: RunEntry): string | undefined {
    return r.rounds.find((x) => x.checkpoint)?.checkpoint;
  }
}
