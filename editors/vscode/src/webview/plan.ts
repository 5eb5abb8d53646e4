// The plan pinned above the conversation: each item with its state, and the plan view's edits (mark done,
// in progress or pending, edit, add after, move, delete, rewind to it), done by the extension's commands.
import type { PlanItem, PlanParams } from '../model/plan';
import { el } from './dom';

const MARK: Record<string, string> = { completed: '●', in_progress: '◐', failed: '✗', pending: '○' };
/** Clicking an item's mark moves it on: pending → in progress → done → pending. */
const NEXT: Record<string, string> = { pending: 'in_progress', in_progress: 'completed', completed: 'pending', failed: 'pending' };

export function drawPlan(root: HTMLElement, plan: PlanParams | undefined, edit: (id: string, edit: string) => void): void {
  const items = plan?.items ?? [];
  root.replaceChildren();
  root.hidden = items.length === 0;
  if (items.length === 0) return;
  const done = items.filter((i) => i.status === 'completed').length;
  const details = el('details', { class: 'plan' });
  details.open = root.dataset.closed !== '1';
  details.addEventListener('toggle', () => (root.dataset.closed = details.open ? '' : '1'));
  details.append(el('summary', {}, `Plan ${done}/${items.length}`));
  const list = el('ol', { class: 'plan-items' });
  for (const item of items) list.append(planRow(item, edit));
  details.append(list);
  root.append(details);
}

function planRow(item: PlanItem, edit: (id: string, edit: string) => void): HTMLElement {
  const id = String(item.id);
  const status = String(item.status);
  const mark = el('button', { class: `mark ${status}`, title: `${status.replace('_', ' ')}: click to mark ${NEXT[status]?.replace('_', ' ') ?? 'pending'}` }, MARK[status] ?? '○');
  mark.addEventListener('click', () => edit(id, NEXT[status] ?? 'pending'));
  const text = el('span', { class: 'text' }, item.text, status === 'in_progress' && item.activeForm ? el('span', { class: 'active' }, ` — ${item.activeForm}`) : undefined);
  const tools = el('span', { class: 'item-tools' });
  for (const [e, label, title] of [
    ['edit', '✎', 'Edit text'],
    ['addAfter', '+', 'Add item after'],
    ['up', '↑', 'Move up'],
    ['down', '↓', 'Move down'],
    ['delete', '✕', 'Delete item'],
    ['rewind', '⟲', 'Rewind to here'],
  ]) {
    const b = el('button', { class: 'icon-button', title, 'aria-label': title }, label);
    b.addEventListener('click', () => edit(id, e));
    tools.append(b);
  }
  return el('li', { class: `plan-item ${status}`, 'aria-label': `${status}: ${item.text}` }, mark, text, tools);
}
