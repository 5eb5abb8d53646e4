// The conversation as the Conversation view shows it: entries from `stepwise.conversation` and the server's
// notifications, kept in order. One model for the extension (which keeps each folder's, so a view opened
// later starts where the run is) and the webview (which draws what changed). Pure logic: no `vscode`, no DOM.

import type * as wire from '../protocol/generated';
import type { Choice, Question } from './ask';
import { imagesOf, type ImageRef } from './images';
import { endLine, foldChildren, stateOf, subagentOf, type SubagentEvent, type SubagentInfo } from './subagents';

export type EntryKind = 'user' | 'assistant' | 'tool' | 'reminder' | 'steer' | 'planEdit' | 'diagnostics' | 'background' | 'note';

export interface ToolInfo {
  id: string;
  name: string;
  summary?: string;
  output?: string;
  isError?: boolean;
  /** The plan step in progress when the call ran. */
  step?: string | null;
  /** `running` until `finished` (or the run's end) arrives. */
  state?: 'running' | 'done' | 'failed';
  /** The `<diagnostics>` lines the model was told after this call's round that belong to this card. */
  diagnostics?: DiagnosticLine[];
  /** A `task` call's child agent, and its calls and text (drawn under this card, not in the list). */
  subagent?: SubagentInfo;
  children?: Entry[];
}

/** One line of a `<diagnostics>` block (`stepwise/diagnostics`): an error with its place, or a file not checked. */
export interface DiagnosticLine {
  /** Relative to the folder; none for a note about no one file. */
  path?: string;
  /** 1-based; none for a `not checked` line. */
  line?: number;
  column?: number;
  text: string;
}

/** A question the server asks before a tool call (`stepwise/ask`), answered in the call's card. */
export interface Approval {
  id: number;
  question: Question;
  /** The answer, once given; `unanswered` when the run ended first. */
  answer?: Choice | 'unanswered';
}

/** What became of a question: answered, or withdrawn by the server (it leaves the card). */
export type Outcome = Choice | 'unanswered' | 'withdrawn';

export interface Entry {
  kind: EntryKind;
  runId?: string;
  text?: string;
  tool?: ToolInfo;
  approval?: Approval;
  /** A prompt's images, or those a tool showed the model. */
  images?: ImageRef[];
  /** A child agent's entry: its id (`sa-<n>`). */
  subagent?: string;
}

/** `stepwise/toolCall` as the view reads it: `wire.ToolCallParams`, any part possibly missing (the view draws
 * what it gets), the phase any string. */
export type ToolEvent = Partial<Omit<wire.ToolCallParams, 'phase' | 'summary' | 'output'>> & {
  phase?: wire.Phase | string;
  summary?: string | null;
  output?: string | null;
};

/** What the view is sent besides entries: a folder's plan, run state and usage. */
export type Event =
  | { type: 'text'; runId?: string; text: string }
  | { type: 'tool'; call: ToolEvent }
  | { type: 'note'; kind: 'reminder' | 'planEdit' | 'note'; text: string; runId?: string }
  | { type: 'user'; kind: 'user' | 'steer'; text: string; runId?: string; images?: ImageRef[] }
  | { type: 'approval'; approval: Approval }
  | { type: 'answered'; id: number; answer: Outcome }
  | { type: 'diagnostics'; runId?: string; calls: string[]; lines: DiagnosticLine[] }
  | { type: 'subagent'; runId?: string; child: SubagentEvent }
  | { type: 'ended'; runId?: string };

const KINDS: readonly EntryKind[] = ['user', 'assistant', 'tool', 'reminder', 'steer', 'planEdit', 'diagnostics', 'background', 'note'];
/** Entries kept per folder: a long session stays within memory (the oldest go first). */
export const MAX_ENTRIES = 20_000;

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : v === undefined || v === null ? undefined : String(v));

/** One entry of `stepwise.conversation`'s result, checked (anything the view cannot show is dropped). */
export function entryOf(raw: unknown): Entry | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const r = raw as Record<string, unknown>;
  const kind = str(r.kind) as EntryKind;
  if (!KINDS.includes(kind)) return undefined;
  const e: Entry = { kind, runId: str(r.runId), text: str(r.text) };
  if (typeof r.subagent === 'string' && r.subagent) e.subagent = r.subagent;
  const images = imagesOf(r.images);
  if (images) e.images = images;
  if (kind === 'tool') {
    const t = (r.tool && typeof r.tool === 'object' ? r.tool : {}) as Record<string, unknown>;
    e.tool = {
      id: str(t.id) ?? '',
      name: str(t.name) ?? 'tool',
      summary: str(t.summary),
      output: str(t.output),
      isError: t.isError === true,
      step: str(t.step) ?? null,
      state: t.isError === true ? 'failed' : 'done',
    };
  }
  return e;
}

/** The entries of a `stepwise.conversation` result (a child's under its `task` call). */
export function entriesOf(result: unknown): Entry[] {
  const list = result && typeof result === 'object' ? (result as { entries?: unknown }).entries : undefined;
  if (!Array.isArray(list)) return [];
  return foldChildren(list.map(entryOf).filter((e): e is Entry => !!e));
}

export class ConversationLog {
  entries: Entry[] = [];
  /** Entries dropped from the front so far (indexes given out stay those of `entries`). */
  dropped = 0;
  /** The cards the latest `diagnostics` event changed (it may change more than one). */
  changedCards: number[] = [];

  load(entries: Entry[]): void {
    this.entries = entries.slice(-MAX_ENTRIES);
    this.dropped = 0;
  }

  /** Applies an event; the index of the entry it added or changed, if any. */
  apply(e: Event): number | undefined {
    switch (e.type) {
      case 'text':
        return this.text(e.runId, e.text);
      case 'tool':
        return this.tool(e.call);
      case 'note':
        return e.text ? this.push({ kind: e.kind, text: e.text, runId: e.runId }) : undefined;
      case 'user':
        return e.text || e.images?.length ? this.user(e.kind, e.text, e.runId, e.images) : undefined;
      case 'approval':
        return this.approval(e.approval);
      case 'answered':
        return this.answered(e.id, e.answer);
      case 'diagnostics':
        return this.diagnostics(e.calls, e.lines);
      case 'subagent':
        return this.subagent(e.child);
      case 'ended':
        return undefined;
    }
  }

  /**
   * What the model was told after a round goes on that round's cards: each line on the card whose summary is its
   * path (the call that changed the file), the rest (files the servers found affected) on the round's last card.
   * A line about no one file (the one above errors not compared with before) goes with the line after it.
   * The index of the last card changed (the others are redrawn through `changedCards`).
   */
  private diagnostics(calls: string[], lines: DiagnosticLine[]): number | undefined {
    const cards = calls.map((id) => this.findTool(id)).filter((i) => i >= 0);
    if (cards.length === 0 || lines.length === 0) return undefined;
    const byPath = (path: string | undefined) => (path ? cards.find((i) => this.entries[i].tool?.summary === path) : undefined);
    const last = cards[cards.length - 1];
    const targets: number[] = [];
    for (let k = lines.length - 1; k >= 0; k--) {
      const l = lines[k];
      targets[k] = l.path ? (byPath(l.path) ?? last) : k + 1 < lines.length && lines[k + 1].path ? targets[k + 1] : last;
    }
    this.changedCards = [];
    for (const [k, l] of lines.entries()) {
      const i = targets[k];
      const t = this.entries[i].tool as ToolInfo;
      (t.diagnostics ??= []).push(l);
      if (!this.changedCards.includes(i)) this.changedCards.push(i);
    }
    return this.changedCards[this.changedCards.length - 1];
  }

  /** The run ended: its calls still running failed (no `finished` will come); the indexes that changed. */
  ended(runId: string | undefined): number[] {
    const out: number[] = [];
    for (let i = this.entries.length - 1; i >= 0 && out.length < 64; i--) {
      const t = this.entries[i].tool;
      if (t?.state === 'running' && (!runId || this.entries[i].runId === runId)) {
        t.state = 'failed';
        // Its child's calls too; a child still running was cut short with it.
        for (const c of t.children ?? []) if (c.tool?.state === 'running') c.tool.state = 'failed';
        if (t.subagent?.state === 'running') t.subagent.state = 'failed';
        out.push(i);
      }
      const a = this.entries[i].approval;
      if (a && !a.answer) {
        a.answer = 'unanswered';
        if (!out.includes(i)) out.push(i);
      }
    }
    return out;
  }

  /** The last user entry's run id is set once `stepwise.run` answers. */
  setRunId(index: number, runId: string): void {
    const e = this.entries[index];
    if (e && !e.runId) e.runId = runId;
  }

  /** A prompt: the view adds it when it sends, the run's start names it again (from a command): once. */
  private user(kind: 'user' | 'steer', text: string, runId: string | undefined, images?: ImageRef[]): number | undefined {
    if (kind === 'user' && runId) {
      for (let i = this.entries.length - 1, n = 0; i >= 0 && n < 20; i--, n++) {
        const e = this.entries[i];
        if (e.kind !== 'user') continue;
        if (e.runId === runId) return undefined;
        if (!e.runId && e.text === text) {
          e.runId = runId;
          return i;
        }
      }
    }
    return this.push({ kind, text, runId, ...(images?.length ? { images } : {}) });
  }

  private push(e: Entry): number {
    this.entries.push(e);
    if (this.entries.length > MAX_ENTRIES) {
      this.entries.shift();
      this.dropped += 1;
    }
    return this.entries.length - 1;
  }

  private text(runId: string | undefined, chunk: string): number | undefined {
    if (!chunk) return undefined;
    const last = this.entries[this.entries.length - 1];
    if (last?.kind === 'assistant' && last.runId === runId) {
      last.text = (last.text ?? '') + chunk;
      return this.entries.length - 1;
    }
    return this.push({ kind: 'assistant', runId, text: chunk });
  }

  private tool(p: ToolEvent): number | undefined {
    if (!p?.name) return undefined;
    if (p.subagent) return this.childCall(p, String(p.subagent));
    const id = str(p.id) ?? '';
    const i = id ? this.findTool(id) : -1;
    if (i < 0) return this.push(callEntry(p, id));
    const t = this.entries[i].tool as ToolInfo;
    if (!finish(t, p)) return undefined;
    // A `task` call's end is its child's: no `finished` comes for its calls left running; its state is the
    // result's last line's if no later word came.
    for (const c of t.children ?? []) if (c.tool?.state === 'running') c.tool.state = 'failed';
    const end = t.subagent?.state === 'running' ? endLine(t.output) : undefined;
    if (t.subagent && end) Object.assign(t.subagent, { state: stateOf(end.how), rounds: end.rounds, tokens: end.tokens });
    return i;
  }

  /** A child's call goes on its `task` card (whose index it returns); none before its child is known. */
  private childCall(p: ToolEvent, child: string): number | undefined {
    const owner = this.findChild(child);
    if (owner < 0) return undefined;
    const t = this.entries[owner].tool as ToolInfo;
    const children = (t.children ??= []);
    const id = str(p.id) ?? '';
    const own = id ? children.find((c) => c.tool?.id === id) : undefined;
    if (!own) children.push({ ...callEntry(p, id), subagent: child });
    else if (!finish(own.tool as ToolInfo, p)) return undefined;
    return owner;
  }

  /** `stepwise/subagent`: the child's state on the card of the call that made it. */
  private subagent(p: SubagentEvent): number | undefined {
    const info = subagentOf(p);
    const i = info && p.toolCallId ? this.findTool(String(p.toolCallId)) : -1;
    if (!info || i < 0) return undefined;
    (this.entries[i].tool as ToolInfo).subagent = info;
    return i;
  }

  private findTool(id: string): number {
    for (let i = this.entries.length - 1, n = 0; i >= 0 && n < 200; i--, n++) if (this.entries[i].tool?.id === id) return i;
    return -1;
  }

  /** The card of the `task` call whose child is `child`. */
  private findChild(child: string): number {
    for (let i = this.entries.length - 1, n = 0; i >= 0 && n < 200; i--, n++) if (this.entries[i].tool?.subagent?.id === child) return i;
    return -1;
  }

  /** The question goes into its call's card (by `callId`), else the newest call still running; with none, it stands alone. */
  private approval(a: Approval): number {
    const callId = a.question.callId;
    // A child's question goes on its `task` card, where the user sees the child (its calls are inside).
    const child = a.question.subagent ? this.findChild(a.question.subagent) : -1;
    const own = child >= 0 ? child : callId ? this.findTool(callId) : -1;
    if (own >= 0) {
      this.entries[own].approval = a;
      return own;
    }
    for (let i = this.entries.length - 1, n = 0; i >= 0 && n < 50; i--, n++) {
      const e = this.entries[i];
      if (e.tool?.state === 'running' && !e.approval) {
        e.approval = a;
        return i;
      }
    }
    return this.push({ kind: 'note', text: a.question.message ?? '', approval: a });
  }

  private answered(id: number, answer: Outcome): number | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (e.approval?.id !== id) continue;
      if (answer === 'withdrawn') e.approval = undefined;
      else e.approval.answer = answer;
      return i;
    }
    return undefined;
  }
}

/** A new call's entry from its `started` (or, missed that, its `finished`). */
function callEntry(p: ToolEvent, id: string): Entry {
  const finished = p.phase !== 'started';
  return {
    kind: 'tool',
    runId: str(p.runId),
    tool: {
      id,
      name: String(p.name),
      summary: str(p.summary),
      output: finished ? str(p.output) : undefined,
      isError: finished && p.isError === true,
      step: str(p.step) ?? null,
      state: !finished ? 'running' : p.isError ? 'failed' : 'done',
    },
  };
}

/** A call's `finished` on its card; false for another `started` (nothing changes). */
function finish(t: ToolInfo, p: ToolEvent): boolean {
  if (p.phase === 'started') return false;
  t.state = p.isError ? 'failed' : 'done';
  t.isError = p.isError === true;
  if (typeof p.output === 'string') t.output = p.output;
  if (p.summary) t.summary = p.summary;
  return true;
}

/** The slash commands the view's input offers. */
export const SLASH_COMMANDS: readonly { name: string; detail: string }[] = [
  { name: 'compact', detail: 'compact the conversation now' },
  { name: 'plan', detail: 'plan first: /plan TASK (alone: edit the plan as text)' },
  { name: 'checkpoints', detail: 'the checkpoints, to rewind to one' },
  { name: 'rewind', detail: 'rewind to a checkpoint' },
  { name: 'review', detail: 'review the changes of the last run' },
];

/** What the input offers after a leading `/`: the view's own commands, then the folder's skills (a skill named
 * as one of the commands is left out: the command wins), those starting with `typed`. */
export function slashChoices(typed: string, skills: readonly { name: string; description: string }[]): { name: string; detail: string }[] {
  const own = SLASH_COMMANDS.map((c) => ({ name: c.name, detail: c.detail }));
  const more = skills.filter((s) => !SLASH_COMMANDS.some((c) => c.name === s.name)).map((s) => ({ name: s.name, detail: s.description }));
  return [...own, ...more].filter((c) => c.name.startsWith(typed));
}

/** A line the input sends: a slash command with its argument, or text for the agent. */
export function parseInput(text: string): { slash: string; arg: string } | { text: string } | undefined {
  const t = text.trim();
  if (!t) return undefined;
  const m = /^\/([a-z]+)\b\s*([\s\S]*)$/.exec(t);
  if (m && SLASH_COMMANDS.some((c) => c.name === m[1])) return { slash: m[1], arg: m[2].trim() };
  return { text: t };
}

/** The number of errors among a card's diagnostic lines (a `not checked` line is not one). */
export function errorCount(lines: readonly DiagnosticLine[] | undefined): number {
  return (lines ?? []).filter((l) => l.line !== undefined).length;
}

/** The number of files a card's diagnostic lines say were not checked (a note about no one file is not one). */
export function uncheckedCount(lines: readonly DiagnosticLine[] | undefined): number {
  return (lines ?? []).filter((l) => l.path !== undefined && l.line === undefined).length;
}

/** The lines of a `<diagnostics>` block as the conversation saved it (`path:line:col: ...` or `path: not checked ...`). */
export function diagnosticLines(block: string): DiagnosticLine[] {
  const out: DiagnosticLine[] = [];
  for (const raw of block.split('\n')) {
    const text = raw.trim();
    if (!text || text === '<diagnostics>' || text === '</diagnostics>') continue;
    const m = /^(.+?):(\d+):(\d+): /.exec(text);
    const unchecked = /^(.+?): not checked /.exec(text);
    if (m) out.push({ path: m[1], line: Number(m[2]), column: Number(m[3]), text });
    // A line naming several files (`a.rs, b.rs: not checked (...)`) links to none of them.
    else if (unchecked && !unchecked[1].includes(', ')) out.push({ path: unchecked[1], text });
    else out.push({ text });
  }
  return out;
}

/** The link a diagnostic line opens: the path relative to the folder, with its place (`#L3C7`); none without a path. */
export function diagnosticHref(l: DiagnosticLine): string | undefined {
  if (!l.path) return undefined;
  return l.line === undefined ? l.path : `${l.path}#L${l.line}C${l.column ?? 1}`;
}

/** `#L3C7` of a link: 1-based line and column, if any. */
export function hrefPlace(href: string): { line: number; column: number } | undefined {
  const m = /#L(\d+)(?:C(\d+))?$/.exec(href);
  return m ? { line: Number(m[1]), column: Number(m[2] ?? 1) } : undefined;
}
