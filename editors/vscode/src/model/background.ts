// A folder's background tasks (`background_run`) as the Conversation view lists them, from the server's
// `stepwise/background` (every task of the session, each time one starts, prints or ends). A running task is
// always listed; one that ended stays, with how it ended, until the next run starts or the user dismisses it.
// Pure logic: no `vscode`, no DOM.
import type * as wire from '../protocol/generated';

export type BackgroundTask = wire.BackgroundTask;

/** What a view draws of the tail: at most this many characters (the server sends about 2,000 bytes). */
const MAX_TAIL = 4000;

const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));

/** The tasks of a `stepwise/background` payload, checked (an entry without an id is dropped). */
export function tasksOf(raw: unknown): BackgroundTask[] {
  const list = raw && typeof raw === 'object' ? (raw as { tasks?: unknown }).tasks : undefined;
  if (!Array.isArray(list)) return [];
  const out: BackgroundTask[] = [];
  for (const t of list) {
    if (!t || typeof t !== 'object') continue;
    const r = t as Record<string, unknown>;
    const id = str(r.id);
    if (!id) continue;
    out.push({ id, command: str(r.command), state: str(r.state) || (r.running === true ? 'running' : 'ended'), running: r.running === true, tail: str(r.tail).slice(-MAX_TAIL) });
  }
  return out;
}

/** Output as text to show: terminal colour and cursor codes dropped, carriage-return overwrites resolved. */
export function plainTail(tail: string): string {
  const noEscapes = tail.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g, '');
  return noEscapes
    .split('\n')
    // What a terminal shows of `a\rb`: the last text written over the line (a `\r\n` ending writes none).
    .map((line) => line.split('\r').filter((p) => p !== '').pop() ?? '')
    .join('\n');
}

/** A task's end in one line (the transcript, the chat): `⏹ bg-1 exited 0: npm run dev`. */
export function endLine(t: BackgroundTask): string {
  return `⏹ ${t.id} ${t.state}: ${t.command}`;
}

/** A task's end as a saved `<background-results>` block tells it (the command is not in it). */
export interface SavedEnd {
  id: string;
  state: string;
  /** The last lines of its output, as the model was told. */
  output: string;
}

/** The ends a saved `<background-results>` block tells: a `bg-1: exited 3` line each, its output's lines after it. */
export function savedEnds(block: string): SavedEnd[] {
  const out: SavedEnd[] = [];
  const output: string[][] = [];
  for (const line of block.split('\n')) {
    const t = line.trim();
    if (t === '<background-results>' || t === '</background-results>') continue;
    const m = /^(bg-\d+): (.+)$/.exec(t);
    if (m) {
      out.push({ id: m[1], state: m[2], output: '' });
      output.push([]);
    } else if (output.length > 0) output[output.length - 1].push(line);
  }
  out.forEach((e, i) => (e.output = plainTail(output[i].join('\n')).replace(/\n+$/, '')));
  return out;
}

/** A saved end in one line, as the view shows it: `⏹ bg-1 exited 3`. */
export function savedEndLine(e: SavedEnd): string {
  return `⏹ ${e.id} ${e.state}`;
}

export class BackgroundTasks {
  private tasks: BackgroundTask[] = [];
  /** Ended tasks no longer listed: dismissed, or ended before a later run started. */
  private readonly hidden = new Set<string>();

  /** Takes the server's list; the tasks that ended since the previous one (or were first seen ended). */
  update(tasks: BackgroundTask[]): BackgroundTask[] {
    const before = new Map(this.tasks.map((t) => [t.id, t]));
    const ended: BackgroundTask[] = [];
    for (const t of tasks) {
      const prev = before.get(t.id);
      // A new session numbers its tasks from bg-1 again: a running task is never hidden.
      if (t.running) this.hidden.delete(t.id);
      else if (!prev || prev.running) ended.push(t);
    }
    this.tasks = tasks;
    return ended;
  }

  /** A run started: the tasks that had ended by then leave the list. */
  runStarted(): boolean {
    let changed = false;
    for (const t of this.tasks)
      if (!t.running && !this.hidden.has(t.id)) {
        this.hidden.add(t.id);
        changed = true;
      }
    return changed;
  }

  /** The user dismissed an ended task (a running one stays: Stop it first). */
  dismiss(id: string): boolean {
    const t = this.tasks.find((x) => x.id === id);
    if (!t || t.running || this.hidden.has(id)) return false;
    this.hidden.add(id);
    return true;
  }

  /** What the view lists: running tasks and those ended since the last run started, in start order. */
  shown(): BackgroundTask[] {
    return this.tasks.filter((t) => t.running || !this.hidden.has(t.id));
  }

  /** The server stopped: its tasks ended with it. */
  serverStopped(): void {
    this.tasks = this.tasks.map((t) => (t.running ? { ...t, running: false, state: 'ended with the server' } : t));
  }

  running(): number {
    return this.tasks.filter((t) => t.running).length;
  }
}
