// A folder's sessions side by side (docs/protocol.md "Sessions side by side") as the views show them: the
// server's list checked, merged with what its notifications said since (a run's state, the plan's progress),
// where a question of a session goes, the status bar's count of running sessions, and the texts of apply and
// discard. Pure logic: no `vscode`, no DOM.
import type * as wire from '../protocol/generated';
import { planCounts, type PlanParams } from './plan';
import type { StatusParams } from './status';

/** The folder's own session: what every command without `session` is about. */
export const MAIN = 'main';

/** One session as `stepwise.sessions` lists it. */
export type SessionInfo = wire.SessionInfo;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/** The sessions of a `stepwise.sessions` result or a `stepwise/sessions` notification, checked (an entry without
 * an id is dropped, one id listed once). */
export function sessionsOf(raw: unknown): SessionInfo[] {
  const list = raw && typeof raw === 'object' ? (raw as { sessions?: unknown }).sessions : undefined;
  if (!Array.isArray(list)) return [];
  const out: SessionInfo[] = [];
  for (const x of list) {
    const r = (x && typeof x === 'object' ? x : {}) as Record<string, unknown>;
    const session = str(r.session);
    if (!session || out.some((s) => s.session === session)) continue;
    const info: SessionInfo = { session, title: str(r.title) ?? session, state: str(r.state) ?? 'idle' };
    if (str(r.worktree)) info.worktree = str(r.worktree);
    if (str(r.branch)) info.branch = str(r.branch);
    if (typeof r.unapplied === 'number' && Number.isFinite(r.unapplied) && r.unapplied >= 0) info.unapplied = r.unapplied;
    if (str(r.progress)) info.progress = str(r.progress);
    out.push(info);
  }
  return out;
}

/** The session a notification or question is about: its `session`, else (a server before sessions) the folder's own. */
export function sessionOf(p: { session?: unknown } | undefined | null): string {
  return str(p?.session) ?? MAIN;
}

/** One key for a folder's session (a URI holds no newline). */
export function sessionKey(workspace: string, session: string): string {
  return `${workspace}\n${session}`;
}

/** What the Conversation view's selector shows of a session. */
export interface SessionTab {
  session: string;
  title: string;
  /** `running`, `waiting`, `idle` or `closed`. */
  state: string;
  /** The plan's progress, `completed/total`. */
  progress?: string;
  /** Its worktree's folder, for a worktree session, and the branch. */
  worktree?: string;
  branch?: string;
  /** A worktree session's files changed and not applied yet. */
  unapplied?: number;
  /** A question of its run waits for an answer in its card. */
  asks: boolean;
  viewed: boolean;
}

/** What the notifications said of a session since the list came. */
export interface LiveSession {
  status?: StatusParams;
  plan?: PlanParams;
}

/**
 * The selector's tabs: the server's list (the folder's own first) with each session's latest state and progress
 * from the notifications, and the sessions this window knows that the list does not have yet (one just made).
 */
export function sessionTabs(list: SessionInfo[], live: (session: string) => LiveSession | undefined, viewed: string, asking: ReadonlySet<string>, known: readonly string[] = []): SessionTab[] {
  const infos: SessionInfo[] = list.some((s) => s.session === MAIN) ? [...list] : [{ session: MAIN, title: 'Main', state: 'idle' }, ...list];
  for (const id of known) if (!infos.some((s) => s.session === id)) infos.push({ session: id, title: id, state: 'idle' });
  if (!infos.some((s) => s.session === viewed)) infos.push({ session: viewed, title: viewed, state: 'idle' });
  return infos.map((info) => {
    const now = live(info.session);
    const state = now?.status?.state;
    const busy = state === 'running' || state === 'waiting';
    const plan = now?.plan;
    const tab: SessionTab = {
      session: info.session,
      title: info.title,
      state: busy ? String(state) : info.state === 'closed' ? 'closed' : now?.status ? 'idle' : info.state,
      progress: plan ? progressOf(plan) : info.progress,
      asks: asking.has(info.session) && info.session !== viewed,
      viewed: info.session === viewed,
    };
    if (info.worktree) tab.worktree = info.worktree;
    if (info.branch) tab.branch = info.branch;
    if (info.unapplied !== undefined) tab.unapplied = info.unapplied;
    return tab;
  });
}

/** A plan's progress as the selector and the status bar say it, `completed/total`; none for an empty plan. */
export function progressOf(plan: PlanParams | undefined): string | undefined {
  const { completed, total } = planCounts(plan);
  return total > 0 ? `${completed}/${total}` : undefined;
}

/** Where a question of the server goes. `card`: in its call's card, the view shows its session. `other`: the view
 * shows another session of its folder: in its session's card, the session badged and a notification that brings
 * it into view. `window`: VS Code's notification asks (the view is closed, or shows another folder). */
export function askPlace(q: { workspace?: string; session?: string }, view: { visible: boolean; folder?: string; viewed: string }): 'card' | 'other' | 'window' {
  if (!view.visible || !q.workspace || q.workspace !== view.folder) return 'window';
  return sessionOf(q) === view.viewed ? 'card' : 'other';
}

/** A session as the status bar and notifications name it: its title, with its folder when the window has several. */
export function sessionLabel(title: string, folder?: string): string {
  return folder ? `${title} (${folder})` : title;
}

/** A session with a run going on, for the status bar. */
export interface RunningSession {
  label: string;
  state: string;
  progress?: string;
}

/** The status bar while more than one session runs: `$(sync~spin) stepwise: 2 running` (those waiting for an
 * answer said), each session in the tooltip; `undefined` for one or none (the session's own state shows then). */
export function runningSummary(running: RunningSession[]): { text: string; tooltip: string } | undefined {
  if (running.length < 2) return undefined;
  const waiting = running.filter((r) => r.state === 'waiting').length;
  const text = `$(sync~spin) stepwise: ${running.length} running${waiting > 0 ? ` (${waiting} waiting for you)` : ''}`;
  const lines = running.map((r) => `${r.label}: ${r.state === 'waiting' ? 'waiting for your answer' : 'running'}${r.progress ? ` ${r.progress}` : ''}`);
  return { text, tooltip: [`${running.length} sessions are running.`, ...lines, 'Click to cancel one.'].join('\n') };
}

const files = (paths: string[]) => (paths.length === 1 ? paths[0] : `${paths.length} files`);

/** What an apply says: the files brought into the folder, and those left alone (the folder changed them since
 * the session began); `warning` when some were. */
export function appliedMessage(result: Partial<wire.AppliedSession> | null | undefined, title: string, folder: string): { text: string; warning: boolean } {
  const applied = Array.isArray(result?.applied) ? result.applied : [];
  const conflicts = Array.isArray(result?.conflicts) ? result.conflicts : [];
  if (applied.length === 0 && conflicts.length === 0) return { text: `stepwise: ${title} has no changes to apply.`, warning: false };
  const brought = applied.length > 0 ? `applied ${files(applied)} of ${title} to ${folder}` : `applied nothing of ${title}`;
  if (conflicts.length === 0) return { text: `stepwise: ${brought}; review them in the Changes view.`, warning: false };
  return { text: `stepwise: ${brought}; left alone, changed in ${folder} since the session began: ${conflicts.join(', ')}`, warning: true };
}

/** The confirmation before discarding a worktree session with changes not applied; none needed otherwise. */
export function discardQuestion(info: SessionInfo | undefined, title: string): { message: string; detail: string } | undefined {
  const n = info?.unapplied ?? 0;
  if (n <= 0) return undefined;
  return {
    message: `Discard ${title}?`,
    detail: `Its worktree holds ${n === 1 ? '1 changed file' : `${n} changed files`} not applied to the folder; discarding removes the worktree and its branch with them. Apply Session brings them in first.`,
  };
}
