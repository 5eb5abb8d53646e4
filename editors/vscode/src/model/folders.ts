// One record per session of each workspace folder: what the server last said about it (plan, run state, usage,
// compaction) and what this window sent it (the run's prompt); per folder, the session in view and the sessions
// the server listed. A folder holds any number of sessions (docs/protocol.md "Sessions side by side"); its own
// is `main`, and every view shows the session in view. Pure logic: no `vscode` import.
import { BackgroundTasks } from './background';
import { mcpNodes, type McpServer } from './mcp';
import { buildTree, nameFromUri, planTitle, type FolderRef, type PlanNode, type PlanParams } from './plan';
import { RoundLog } from './rounds';
import { MAIN, type SessionInfo } from './sessions';
import type { CompactedParams, StatusParams, UsageParams } from './status';

export interface FolderState {
  /** The folder's URI, as sent to the server. */
  uri: string;
  /** The session of the folder this record is about (`main`: the folder's own). */
  session: string;
  /** The latest `stepwise/plan` (or `stepwise.plan` result). */
  plan?: PlanParams;
  /** How many plans arrived, so a fetched plan never overwrites a newer notification. */
  planUpdates: number;
  status?: StatusParams;
  /** The current run's token use. */
  usage?: UsageParams;
  /** The latest compaction, shown in the status bar's tooltip. */
  compaction?: CompactedParams;
  /** The prompt of the current or last run started from this window. */
  prompt?: string;
  /** The folder's MCP servers, as `stepwise/mcp` last said (they start at the folder's first run). */
  mcp?: McpServer[];
  /** The transcript as runs and rounds (the Transcript view). */
  rounds: RoundLog;
  /** Its background tasks (`stepwise/background`), as the Conversation view lists them. */
  background: BackgroundTasks;
}

/** A folder: its sessions' records, the one in view, and the server's list of them. */
interface FolderRecord {
  viewed: string;
  sessions: Map<string, FolderState>;
  list: SessionInfo[];
}

export function isBusy(status: StatusParams | undefined): boolean {
  return !!status && (status.state === 'running' || status.state === 'waiting');
}

export class Folders {
  private readonly map = new Map<string, FolderRecord>();

  private folder(uri: string): FolderRecord {
    let f = this.map.get(uri);
    if (!f) {
      f = { viewed: MAIN, sessions: new Map(), list: [] };
      this.map.set(uri, f);
    }
    return f;
  }

  /** A session's record (default: the one in view), if any. */
  get(uri: string | undefined, session?: string): FolderState | undefined {
    if (uri === undefined) return undefined;
    const f = this.map.get(uri);
    return f?.sessions.get(session ?? f.viewed);
  }

  /** A session's record (default: the one in view), made when missing. */
  ensure(uri: string, session?: string): FolderState {
    const f = this.folder(uri);
    const id = session ?? f.viewed;
    let s = f.sessions.get(id);
    if (!s) {
      s = { uri, session: id, planUpdates: 0, rounds: new RoundLog(), background: new BackgroundTasks() };
      f.sessions.set(id, s);
    }
    return s;
  }

  /** Every session's record, of every folder. */
  all(): FolderState[] {
    return [...this.map.values()].flatMap((f) => [...f.sessions.values()]);
  }

  /** The record of each folder's session in view (what the plan view, the status bar and the commands show). */
  shown(): FolderState[] {
    return [...this.map.keys()].map((uri) => this.ensure(uri));
  }

  /** The session in view of a folder (`main` until another is chosen). */
  viewed(uri: string | undefined): string {
    return (uri !== undefined && this.map.get(uri)?.viewed) || MAIN;
  }

  /** Puts a session in view; false when it was already. */
  setViewed(uri: string, session: string): boolean {
    const f = this.folder(uri);
    if (f.viewed === session) return false;
    f.viewed = session;
    return true;
  }

  /** The folder's sessions as the server last listed them (`stepwise.sessions`, `stepwise/sessions`). */
  list(uri: string | undefined): SessionInfo[] {
    return (uri !== undefined && this.map.get(uri)?.list) || [];
  }

  /** Stores the server's list. A session it no longer has leaves the view (the folder's own comes back) and its
   * record goes; returns whether the session in view changed. */
  setList(uri: string, list: SessionInfo[]): boolean {
    const f = this.folder(uri);
    f.list = list;
    const known = new Set(list.map((s) => s.session));
    for (const id of [...f.sessions.keys()]) if (id !== MAIN && !known.has(id)) f.sessions.delete(id);
    if (f.viewed !== MAIN && !known.has(f.viewed)) {
      f.viewed = MAIN;
      return true;
    }
    return false;
  }

  /** A session's title: the server's, `Main` for the folder's own. */
  sessionTitle(uri: string | undefined, session: string): string {
    return this.list(uri).find((s) => s.session === session)?.title ?? (session === MAIN ? 'Main' : session);
  }

  /** Forgets folders that left the window. */
  retain(uris: Set<string>): void {
    for (const uri of [...this.map.keys()]) if (!uris.has(uri)) this.map.delete(uri);
  }

  /** Stores a `stepwise/plan` payload in its session's record. Returns false when it carries no workspace. */
  updatePlan(params: PlanParams): boolean {
    if (!params || typeof params.workspace !== 'string') return false;
    const f = this.ensure(params.workspace, typeof params.session === 'string' ? params.session : MAIN);
    f.plan = {
      workspace: params.workspace,
      session: f.session,
      items: Array.isArray(params.items) ? params.items : [],
      completed: params.completed,
      total: params.total,
      revision: typeof params.revision === 'number' ? params.revision : undefined,
      by: params.by,
    };
    f.planUpdates += 1;
    return true;
  }

  /** The plan of the folder's session in view. */
  plan(uri: string | undefined): PlanParams | undefined {
    return this.get(uri)?.plan;
  }

  hasPlanItems(): boolean {
    return this.all().some((f) => (f.plan?.items.length ?? 0) > 0);
  }

  /** Whether a session (default: the one in view) has a run going on. */
  busy(uri: string | undefined, session?: string): boolean {
    return isBusy(this.get(uri, session)?.status);
  }

  /** Whether a session in view has a run going on (the plan view's Cancel and Steer act on it). */
  anyBusy(): boolean {
    return this.shown().some((f) => isBusy(f.status));
  }

  /** Every session with a run going on. */
  running(): FolderState[] {
    return this.all().filter((f) => isBusy(f.status));
  }

  /** The first folder with a run going on (in any of its sessions). */
  firstBusy(): string | undefined {
    return this.running()[0]?.uri;
  }

  /** A new server: runs do not outlive their server process. */
  serverStarted(): void {
    for (const f of this.all()) {
      f.status = undefined;
      f.usage = undefined;
      f.mcp = undefined;
      // Tasks end with their server.
      f.background = new BackgroundTasks();
    }
  }

  /** The server stopped: every run it had ended with an error. */
  serverStopped(): void {
    for (const f of this.all()) {
      f.background.serverStopped();
      if (f.status && f.status.state !== 'idle') {
        f.status = { workspace: f.uri, session: f.session, state: 'idle', reason: 'error', message: 'the server stopped' };
        f.rounds.status({ ...f.status, runId: f.rounds.runs.find((r) => r.state !== 'idle')?.runId });
      }
    }
  }

  private plans(): Map<string, PlanParams> {
    const out = new Map<string, PlanParams>();
    for (const f of this.shown()) if (f.plan) out.set(f.uri, f.plan);
    return out;
  }

  /**
   * Roots of the plan tree: a warning per MCP server that failed, then the plan of each folder's session in
   * view. One folder in the window: its items. Several: one node per folder.
   */
  roots(folders: FolderRef[]): PlanNode[] {
    const name = (uri: string) => (folders.length > 1 ? folders.find((f) => f.uri === uri)?.name ?? nameFromUri(uri) : undefined);
    const warnings = this.shown().flatMap((f) => mcpNodes(f.uri, f.mcp, name(f.uri)));
    return [...warnings, ...buildTree(folders, this.plans())];
  }

  /** The plan view's title over the window's folders. */
  title(folders: FolderRef[]): string {
    return planTitle(folders.map((f) => this.plan(f.uri)).filter((p): p is PlanParams => !!p));
  }
}
