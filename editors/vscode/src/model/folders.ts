// One record per workspace folder: what the server last said about it (plan, run state, usage, compaction)
// and what this window sent it (the run's prompt). Pure logic: no `vscode` import.
import { BackgroundTasks } from './background';
import { mcpNodes, type McpServer } from './mcp';
import { buildTree, nameFromUri, planTitle, type FolderRef, type PlanNode, type PlanParams } from './plan';
import { RoundLog } from './rounds';
import type { CompactedParams, StatusParams, UsageParams } from './status';

export interface FolderState {
  /** The folder's URI, as sent to the server. */
  uri: string;
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

export function isBusy(status: StatusParams | undefined): boolean {
  return !!status && (status.state === 'running' || status.state === 'waiting');
}

export class Folders {
  private readonly map = new Map<string, FolderState>();

  get(uri: string | undefined): FolderState | undefined {
    return uri === undefined ? undefined : this.map.get(uri);
  }

  ensure(uri: string): FolderState {
    let f = this.map.get(uri);
    if (!f) {
      f = { uri, planUpdates: 0, rounds: new RoundLog(), background: new BackgroundTasks() };
      this.map.set(uri, f);
    }
    return f;
  }

  all(): FolderState[] {
    return [...this.map.values()];
  }

  /** Forgets folders that left the window. */
  retain(uris: Set<string>): void {
    for (const uri of [...this.map.keys()]) if (!uris.has(uri)) this.map.delete(uri);
  }

  /** Stores a `stepwise/plan` payload. Returns false when it carries no workspace. */
  updatePlan(params: PlanParams): boolean {
    if (!params || typeof params.workspace !== 'string') return false;
    const f = this.ensure(params.workspace);
    f.plan = {
      workspace: params.workspace,
      items: Array.isArray(params.items) ? params.items : [],
      completed: params.completed,
      total: params.total,
      revision: typeof params.revision === 'number' ? params.revision : undefined,
      by: params.by,
    };
    f.planUpdates += 1;
    return true;
  }

  plan(uri: string | undefined): PlanParams | undefined {
    return this.get(uri)?.plan;
  }

  hasPlanItems(): boolean {
    return this.all().some((f) => (f.plan?.items.length ?? 0) > 0);
  }

  busy(uri: string | undefined): boolean {
    return isBusy(this.get(uri)?.status);
  }

  anyBusy(): boolean {
    return this.all().some((f) => isBusy(f.status));
  }

  /** The first folder with a run going on. */
  firstBusy(): string | undefined {
    return this.all().find((f) => isBusy(f.status))?.uri;
  }

  /** A new server: runs do not outlive their server process. */
  serverStarted(): void {
    for (const f of this.map.values()) {
      f.status = undefined;
      f.usage = undefined;
      f.mcp = undefined;
      // Tasks end with their server.
      f.background = new BackgroundTasks();
    }
  }

  /** The server stopped: every run it had ended with an error. */
  serverStopped(): void {
    for (const f of this.map.values()) {
      f.background.serverStopped();
      if (f.status && f.status.state !== 'idle') {
        f.status = { workspace: f.uri, state: 'idle', reason: 'error', message: 'the server stopped' };
        f.rounds.status({ ...f.status, runId: f.rounds.runs.find((r) => r.state !== 'idle')?.runId });
      }
    }
  }

  private plans(): Map<string, PlanParams> {
    const out = new Map<string, PlanParams>();
    for (const f of this.map.values()) if (f.plan) out.set(f.uri, f.plan);
    return out;
  }

  /**
   * Roots of the plan tree: a warning per MCP server that failed, then the plan. One folder in the window:
   * its items. Several: one node per folder.
   */
  roots(folders: FolderRef[]): PlanNode[] {
    const name = (uri: string) => (folders.length > 1 ? folders.find((f) => f.uri === uri)?.name ?? nameFromUri(uri) : undefined);
    const warnings = this.all().flatMap((f) => mcpNodes(f.uri, f.mcp, name(f.uri)));
    return [...warnings, ...buildTree(folders, this.plans())];
  }

  /** The plan view's title over the window's folders. */
  title(folders: FolderRef[]): string {
    return planTitle(folders.map((f) => this.plan(f.uri)).filter((p): p is PlanParams => !!p));
  }
}
