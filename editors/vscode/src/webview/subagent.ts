// A `task` call's child agent on its card (issue 48): its state (waiting while its question waits), its id, agent,
// rounds and tokens, its latest call while it runs, a Stop that ends this child alone, and, opened, its own calls as
// cards and its text (the parent's list never holds them).
import type { Entry, ToolInfo } from '../model/conversation';
import { latestCall, subagentLine } from '../model/subagents';
import { el } from './dom';
import { renderMarkdown } from './markdown';

const STATE_TEXT: Record<string, string> = { running: 'running', waiting: 'waiting for you', done: 'done', failed: 'failed', cancelled: 'cancelled' };

/** The child's part of its card: a status row, the latest call, its calls (closed); none without a child. */
export function subagentPart(e: Entry, stop: (id: string) => void, drawChild: (child: Entry) => HTMLElement): HTMLElement | undefined {
  const t = e.tool as ToolInfo;
  const s = t.subagent;
  if (!s) return undefined;
  const waiting = s.state === 'running' && !!e.approval && !e.approval.answer;
  const state = waiting ? 'waiting' : s.state;
  const row = el(
    'div',
    { class: 'sa-row' },
    el('span', { class: `sa-state ${state}` }, STATE_TEXT[state] ?? state),
    el('span', { class: 'sa-line', title: `${s.agent}: ${s.description}` }, subagentLine(s)),
  );
  if (s.state === 'running') {
    const b = el('button', { class: 'secondary sa-stop', title: `Stop ${s.id} alone: the agent goes on with what it found` }, 'Stop');
    b.addEventListener('click', () => {
      b.disabled = true;
      stop(s.id);
    });
    row.append(b);
  }
  const part = el('div', { class: `subagent ${state}`, 'data-subagent': s.id }, row);
  const latest = s.state === 'running' ? latestCall(t.children, s.lastTool) : undefined;
  if (latest) part.append(el('div', { class: 'sa-latest', title: latest }, `latest: ${latest}`));
  const children = t.children ?? [];
  if (children.length > 0) {
    const calls = children.filter((c) => c.kind === 'tool').length;
    const label = `${s.id}'s ${calls} ${calls === 1 ? 'call' : 'calls'}${children.length > calls ? ' and text' : ''}`;
    const list = el('div', { class: 'sa-children' });
    for (const c of children) list.append(c.kind === 'tool' ? drawChild(c) : childText(c));
    part.append(el('details', { class: 'sa-calls', 'data-keep': `children-${s.id}` }, el('summary', {}, label), list));
  }
  return part;
}

function childText(e: Entry): HTMLElement {
  const div = el('div', { class: 'entry assistant markdown child' });
  div.innerHTML = renderMarkdown(e.text ?? '');
  return div;
}

/** A card drawn again keeps what the user opened in it (a child's calls, an output). */
export function keepOpen(from: HTMLElement, to: HTMLElement): void {
  from.querySelectorAll<HTMLDetailsElement>('details[data-keep]').forEach((d) => {
    const same = to.querySelector<HTMLDetailsElement>(`details[data-keep="${CSS.escape(d.dataset.keep ?? '')}"]`);
    if (same) same.open = d.open;
  });
}
