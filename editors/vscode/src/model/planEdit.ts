// The user's edits of a plan, as the item list `stepwise.editPlan` replaces the plan with, and the plan's
// render form (the text the model reads, which the plan document shows). Pure logic: no `vscode` import.
import type * as wire from '../protocol/generated';
import { normalizeStatus, planCounts, type PlanItem, type PlanParams } from './plan';

/** An item as `stepwise.editPlan` takes it: no `id` makes it a new item. */
export type EditItem = wire.EditItem & { status: string };

export type EditPlanArgs = wire.EditPlanArgs;

export type EditKind = 'text' | 'addAfter' | 'delete' | 'up' | 'down' | 'pending' | 'in_progress' | 'completed';

function asEditItem(i: PlanItem): EditItem {
  // The server takes ids as strings (older servers sent numbers).
  const out: EditItem = { id: String(i.id), text: String(i.text ?? ''), status: normalizeStatus(i.status) };
  if (i.activeForm) out.activeForm = String(i.activeForm);
  return out;
}

/**
 * The plan's items after one edit of the item `id`; `undefined` when the item is not in the plan (the plan
 * changed meanwhile) or the edit changes nothing. `text` is the new text (`text`) or the new item's
 * (`addAfter`). Marking an item in progress puts the one in progress before back to pending, as only one
 * item may be in progress.
 */
export function editItems(items: PlanItem[], id: string | number, kind: EditKind, text?: string): EditItem[] | undefined {
  const list = items.map(asEditItem);
  const at = list.findIndex((i) => String(i.id) === String(id));
  if (at < 0) return undefined;
  const item = list[at];
  switch (kind) {
    case 'text': {
      const t = (text ?? '').trim();
      if (!t || t === item.text) return undefined;
      // The activeForm described the old text.
      list[at] = { id: item.id, text: t, status: item.status };
      return list;
    }
    case 'addAfter': {
      const t = (text ?? '').trim();
      if (!t) return undefined;
      list.splice(at + 1, 0, { text: t, status: 'pending' });
      return list;
    }
    case 'delete':
      list.splice(at, 1);
      return list;
    case 'up':
    case 'down': {
      const to = kind === 'up' ? at - 1 : at + 1;
      if (to < 0 || to >= list.length) return undefined;
      [list[at], list[to]] = [list[to], list[at]];
      return list;
    }
    default: {
      if (item.status === kind) return undefined;
      if (kind === 'in_progress')
        for (const other of list) if (other !== item && other.status === 'in_progress') other.status = 'pending';
      item.status = kind;
      return list;
    }
  }
}

const MARK: Record<string, string> = { completed: 'x', in_progress: '>', pending: ' ' };

/** The plan in its render form: `[ ] #1: text` per item, a blank line, `(1/3 completed)`; `No todos.` when empty. */
export function renderPlan(plan: PlanParams | undefined): string {
  const items = plan?.items ?? [];
  if (items.length === 0) return 'No todos.\n';
  const lines = items.map((i) => `[${MARK[normalizeStatus(i.status)] ?? ' '}] #${i.id}: ${i.text}`);
  const { completed, total } = planCounts(plan);
  return `${lines.join('\n')}\n\n(${completed}/${total} completed)\n`;
}

/** The arguments of `stepwise.editPlan`: the new items or render text, and the revision the edit was made on. */
export function editPlanArguments(workspace: string, edit: { items?: EditItem[]; text?: string }, baseRevision: number | undefined): [EditPlanArgs] {
  const args: EditPlanArgs = { workspace };
  if (edit.items) args.items = edit.items;
  if (edit.text !== undefined) args.text = edit.text;
  if (typeof baseRevision === 'number') args.baseRevision = baseRevision;
  return [args];
}

/** The plan text of a document: `No todos.` (what an empty plan renders as) means no items. */
export function documentPlanText(text: string): string {
  return text.trim() === 'No todos.' ? '' : text;
}

/** The message of a failed `stepwise.editPlan`: the rule's text, or what to do about a stale revision. */
export function editErrorMessage(message: string): string {
  if (/changed/i.test(message)) return `stepwise: your edit was not applied: ${message}`;
  return `stepwise: ${message}`;
}
