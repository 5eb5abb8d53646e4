// The plan model: `stepwise/plan` payloads -> tree nodes, titles and summaries.
// Pure logic (no `vscode` import) so it can be unit-tested with node's test runner.
import type { IconSpec, TreeNode } from './treeNode';

import type * as wire from '../protocol/generated';

export type PlanStatus = wire.PlanStatus;

/** An item as read: the server's (`wire.PlanItem`), with an id or status of another shape tolerated (a payload
 * from an older server or a hand-made one; the logic below normalizes them). */
export type PlanItem = Omit<wire.PlanItem, 'id' | 'status'> & { id: string | number; status: PlanStatus | string };

/** `stepwise/plan` (and the result of `stepwise.plan`) as read: `wire.PlanParams`, with what servers before plan
 * editing (and before sessions: no `session` is the folder's own) leave out optional. */
export type PlanParams = Omit<wire.PlanParams, 'session' | 'items' | 'completed' | 'total' | 'revision' | 'by' | 'change'> & {
  session?: string;
  items: PlanItem[];
  completed?: number;
  total?: number;
  revision?: number;
  by?: wire.By | string;
  change?: wire.PlanChange | string;
};

export interface FolderRef {
  /** The folder's URI, as sent to the server (`Uri.toString()`). */
  uri: string;
  name: string;
}

export type { IconSpec } from './treeNode';

/** `warning`: a problem shown above the plan (an MCP server that failed). An item's `accessibility` is
 * `<status>: <text>[, <activeForm>]`. */
export interface PlanNode extends TreeNode<'folder' | 'item' | 'warning', PlanNode> {
  status?: PlanStatus;
}

const KNOWN: readonly PlanStatus[] = ['pending', 'in_progress', 'completed', 'failed'];

export function normalizeStatus(status: unknown): PlanStatus {
  const s = String(status ?? '').toLowerCase().replace(/[\s-]+/g, '_');
  if ((KNOWN as readonly string[]).includes(s)) return s as PlanStatus;
  if (s === 'done') return 'completed';
  if (s === 'inprogress' || s === 'active' || s === 'running') return 'in_progress';
  if (s === 'error' || s === 'blocked') return 'failed';
  return 'pending';
}

export function statusWord(status: PlanStatus): string {
  switch (status) {
    case 'in_progress': return 'in progress';
    default: return status;
  }
}

export function statusIcon(status: PlanStatus): IconSpec {
  switch (status) {
    case 'completed': return { id: 'pass-filled', color: 'testing.iconPassed' };
    case 'in_progress': return { id: 'sync~spin', color: 'charts.yellow' };
    case 'failed': return { id: 'error', color: 'testing.iconFailed' };
    default: return { id: 'circle-large-outline' };
  }
}

/** `{completed, total}` of a plan: the server's numbers when present, else counted from the items. */
export function planCounts(plan: PlanParams | undefined): { completed: number; total: number } {
  if (!plan) return { completed: 0, total: 0 };
  const items = Array.isArray(plan.items) ? plan.items : [];
  const completed = Number.isInteger(plan.completed)
    ? (plan.completed as number)
    : items.filter((i) => normalizeStatus(i.status) === 'completed').length;
  const total = Number.isInteger(plan.total) ? (plan.total as number) : items.length;
  return { completed, total };
}

/** The item being worked on, if any. */
export function activeItem(plan: PlanParams | undefined): PlanItem | undefined {
  return plan?.items?.find((i) => normalizeStatus(i.status) === 'in_progress');
}

export function itemNode(workspace: string, item: PlanItem): PlanNode {
  const status = normalizeStatus(item.status);
  const text = String(item.text ?? '');
  const activeForm = item.activeForm ? String(item.activeForm) : undefined;
  let description: string | undefined;
  if (status === 'in_progress') description = activeForm ?? 'in progress';
  else if (status === 'failed') description = 'failed';
  const word = statusWord(status);
  const tooltipLines = [`#${item.id} · ${word}`, text];
  if (status === 'in_progress' && activeForm) tooltipLines.push(activeForm);
  return {
    kind: 'item',
    id: `${workspace}#${item.id}`,
    workspace,
    label: text,
    description,
    tooltip: tooltipLines.join('\n'),
    icon: statusIcon(status),
    accessibility: `${word}: ${text}` + (status === 'in_progress' && activeForm ? `, ${activeForm}` : ''),
    contextValue: `stepwise.planItem.${status}`,
    status,
  };
}

export function folderNode(folder: FolderRef, plan: PlanParams | undefined): PlanNode {
  const { completed, total } = planCounts(plan);
  const children = (plan?.items ?? []).map((i) => itemNode(folder.uri, i));
  const active = activeItem(plan);
  const done = total > 0 && completed === total;
  return {
    kind: 'folder',
    id: folder.uri,
    workspace: folder.uri,
    label: folder.name,
    description: total > 0 ? `${completed}/${total}` : 'no plan',
    tooltip: `${folder.name}: ${total > 0 ? `${completed}/${total} completed` : 'no plan'}`,
    icon: active ? { id: 'sync~spin', color: 'charts.yellow' } : done ? { id: 'pass-filled', color: 'testing.iconPassed' } : { id: 'folder' },
    accessibility: `${folder.name}: ${total > 0 ? `${completed} of ${total} completed` : 'no plan'}`,
    contextValue: 'stepwise.planFolder',
    children,
  };
}

/** A readable name for a workspace URI that is not among the window's folders. */
export function nameFromUri(uri: string): string {
  const trimmed = uri.replace(/\/+$/, '');
  const last = trimmed.slice(trimmed.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(last) || uri;
  } catch {
    return last || uri;
  }
}

export function buildTree(folders: FolderRef[], plans: Map<string, PlanParams>): PlanNode[] {
  const known = new Set(folders.map((f) => f.uri));
  const extra: FolderRef[] = [...plans.keys()]
    .filter((uri) => !known.has(uri) && (plans.get(uri)?.items.length ?? 0) > 0)
    .map((uri) => ({ uri, name: nameFromUri(uri) }));
  const all = [...folders, ...extra];
  if (all.length === 0) return [];
  if (all.length === 1) {
    const f = all[0];
    return (plans.get(f.uri)?.items ?? []).map((i) => itemNode(f.uri, i));
  }
  // Several folders: only those with a plan, so an empty tree shows the welcome view.
  return all.filter((f) => (plans.get(f.uri)?.items.length ?? 0) > 0).map((f) => folderNode(f, plans.get(f.uri)));
}

/** The plan view's title: `Plan` or `Plan <done>/<total>` summed over the folders. */
export function planTitle(plans: PlanParams[]): string {
  let completed = 0;
  let total = 0;
  for (const p of plans) {
    const c = planCounts(p);
    completed += c.completed;
    total += c.total;
  }
  return total > 0 ? `Plan ${completed}/${total}` : 'Plan';
}

/** A one-line summary: `1/3 · Adding a farewell`, `3/3 · done`, `0/2 · 2 pending`, or `no plan`. */
export function planSummary(plan: PlanParams | undefined): string {
  const { completed, total } = planCounts(plan);
  if (total === 0) return 'no plan';
  const active = activeItem(plan);
  if (active) return `${completed}/${total} · ${active.activeForm || active.text}`;
  if (completed === total) return `${completed}/${total} · done`;
  const pending = (plan?.items ?? []).filter((i) => normalizeStatus(i.status) === 'pending').length;
  return `${completed}/${total} · ${pending} pending`;
}
