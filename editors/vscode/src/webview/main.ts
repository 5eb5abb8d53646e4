// The Conversation view's page. It draws what the extension sends (a whole conversation on `reset`, then one
// entry at a time) and sends back what the user does. Drawing is incremental: a streamed chunk redraws only its
// entry, once per frame; the model's markdown is drawn when an entry comes near the screen, so a session of
// hundreds of rounds opens and scrolls smoothly.
import type { Entry } from '../model/conversation';
import type { FolderRef, PlanParams } from '../model/plan';
import type { SessionTab } from '../model/sessions';
import type { StatusParams, UsageParams } from '../model/status';
import { Attachments } from './attachments';
import { BackgroundList } from './background';
import { el } from './dom';
import { drawEntry, drawMarkdown, type EntryActions } from './entries';
import { Input } from './input';
import { drawPlan } from './plan';
import { SessionStrip } from './sessions';
import { keepOpen } from './subagent';

declare function acquireVsCodeApi(): { postMessage(m: unknown): void; getState(): any; setState(s: unknown): void };
const vscode = acquireVsCodeApi();
const post = (m: unknown) => vscode.postMessage(m);

interface State {
  folder?: FolderRef;
  folders?: FolderRef[];
  /** The folder's sessions, the one in view among them. */
  sessions?: SessionTab[];
  plan?: PlanParams;
  status?: StatusParams;
  usage?: UsageParams;
  busy?: boolean;
  /** The plan waits for approval (a run ended `plan_ready`). */
  planReady?: boolean;
}

let state: State = {};
let entries: Entry[] = [];
let nodes: HTMLElement[] = [];

/** Images asked for by id, not yet come. */
const asked = new Set<string>();
const actions: EntryActions = {
  approve: (id, answer) => post({ type: 'approve', id, answer }),
  rewind: (index) => post({ type: 'rewind', index }),
  busy: () => !!state.busy,
  images: new Map(),
  fetchImage: (id) => {
    if (asked.has(id)) return;
    asked.add(id);
    post({ type: 'image', id });
  },
  cancelSubagent: (id) => post({ type: 'cancelSubagent', id }),
};

// ---- layout -----------------------------------------------------------------------------------------------
const folderPick = el('select', { class: 'folder', 'aria-label': 'Folder' });
folderPick.addEventListener('change', () => post({ type: 'folder', uri: folderPick.value }));
const sessions = new SessionStrip({ show: (session) => post({ type: 'session', session }), act: (action, session) => post({ type: 'sessionAction', action, session }) });
const planRoot = el('div', { class: 'plan-root' });
// Under the plan while it waits: the plan-ready message's buttons. A comment is the text in the input (none:
// the extension asks for it).
const approve = el('button', { class: 'primary', title: 'Run the plan' }, 'Approve');
const approveFresh = el('button', { class: 'secondary', title: 'Run the plan in a fresh context: only the plan goes on' }, 'Approve with Fresh Context');
const comment = el('button', { class: 'secondary', title: 'Plan again with the text in the input below as a comment' }, 'Comment');
const planButtons = [approve, approveFresh, comment];
const planBar = el(
  'div',
  { class: 'plan-ready', role: 'group', 'aria-label': 'The plan is ready' },
  el('div', { class: 'question' }, 'The plan is ready; nothing has changed yet.'),
  el('div', { class: 'buttons' }, ...planButtons),
);
planBar.hidden = true;
function planAction(action: string, text?: string): void {
  for (const b of planButtons) b.disabled = true;
  post({ type: 'planAction', action, ...(text ? { text } : {}) });
}
approve.addEventListener('click', () => planAction('approve'));
approveFresh.addEventListener('click', () => planAction('approveFresh'));
comment.addEventListener('click', () => {
  const text = input.box.value.trim();
  if (text) input.box.value = '';
  planAction('comment', text);
});
const list = el('div', { class: 'entries', role: 'log', 'aria-live': 'polite' });
const empty = el('div', { class: 'empty' }, 'Give the agent a task below. It plans its steps, and you see its work here: its text, each tool call, and the questions it asks.');
const statusLine = el('span', { class: 'status' });
const usageLine = el('span', { class: 'usage' });
const stop = el('button', { class: 'secondary stop', title: 'Cancel the run' }, 'Stop');
stop.addEventListener('click', () => post({ type: 'stop' }));
const sendButton = el('button', { class: 'primary send' }, 'Send');
const attachments = new Attachments();
// Images go with a prompt; while a run goes on the text steers it and the images wait for the next prompt.
const send = (text: string) => {
  // What the user sends, and what follows it, is in view (also after cards above were opened).
  toEnd();
  if (state.busy) return text.trim() && post({ type: 'send', text });
  post({ type: 'send', text, images: attachments.take() });
};
const input = new Input({ send, files: (query) => post({ type: 'files', query }), skills: () => post({ type: 'skills' }), hasImages: () => !state.busy && attachments.count > 0 }, vscode.getState()?.prompts ?? []);
attachments.listen(input.root);
input.root.prepend(attachments.root);
sendButton.addEventListener('click', () => input.box.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' })));
const footer = el('div', { class: 'footer' }, statusLine, usageLine);
const controls = el('div', { class: 'controls' }, stop, sendButton);
const background = new BackgroundList({ stop: (id) => post({ type: 'killBackground', id }), dismiss: (id) => post({ type: 'dismissBackground', id }) });
document.getElementById('app')?.append(el('div', { class: 'top' }, folderPick, sessions.root, planRoot, planBar), list, background.root, el('div', { class: 'bottom' }, input.root, controls, footer));

list.addEventListener('click', (e) => {
  const a = (e.target as HTMLElement).closest('a');
  if (!a) return;
  e.preventDefault();
  const href = a.getAttribute('href');
  if (href) post({ type: 'open', href });
});

// ---- the list: incremental ----------------------------------------------------------------------------------
/** Markdown is drawn for entries near the screen (and for the one streaming). */
const near = new IntersectionObserver(
  (seen) => {
    for (const s of seen) {
      if (!s.isIntersecting) continue;
      const node = s.target as HTMLElement;
      near.unobserve(node);
      const e = entries[Number(node.dataset.index)];
      if (node.dataset.pending && e) drawMarkdown(node, e.text ?? '');
    }
  },
  { root: list, rootMargin: '800px 0px' },
);

function atBottom(): boolean {
  return list.scrollHeight - list.scrollTop - list.clientHeight < 40;
}

/**
 * Scrolls to the list's end, and once more at the next frame: an entry is laid out at its real height only once
 * near the screen (`content-visibility`), so the end moves after the first scroll. The user's own scroll meanwhile
 * wins.
 */
function toEnd(): void {
  list.scrollTop = list.scrollHeight;
  const at = list.scrollTop;
  requestAnimationFrame(() => {
    if (Math.abs(list.scrollTop - at) < 2) list.scrollTop = list.scrollHeight;
  });
}

function drawAll(): void {
  for (const n of nodes) near.unobserve(n);
  const frag = document.createDocumentFragment();
  nodes = entries.map((e, i) => drawEntry(e, i, actions));
  for (const n of nodes) frag.append(n);
  list.replaceChildren(frag);
  for (const n of nodes) if (n.dataset.pending) near.observe(n);
  empty.hidden = entries.length > 0;
  if (entries.length === 0) list.append(empty);
  toEnd();
}

/** Entries to redraw at the next frame: a burst of chunks costs one markdown pass. */
const dirty = new Set<number>();
let frame = 0;

function update(index: number, entry: Entry): void {
  entries[index] = entry;
  dirty.add(index);
  if (!frame) frame = requestAnimationFrame(flush);
}

function flush(): void {
  frame = 0;
  const stick = atBottom();
  if (empty.isConnected) empty.remove();
  for (const i of [...dirty].sort((a, b) => a - b)) {
    const e = entries[i];
    if (!e) continue;
    const old = nodes[i];
    if (old && e.kind === 'assistant' && old.classList.contains('assistant')) {
      drawMarkdown(old, e.text ?? '');
      continue;
    }
    const node = drawEntry(e, i, actions);
    if (e.kind === 'assistant') drawMarkdown(node, e.text ?? '');
    if (old) {
      near.unobserve(old);
      keepOpen(old, node);
      old.replaceWith(node);
    } else list.append(node);
    nodes[i] = node;
  }
  dirty.clear();
  if (stick) toEnd();
}

// ---- plan, state, footer ------------------------------------------------------------------------------------
function drawState(): void {
  const folders = state.folders ?? [];
  folderPick.hidden = folders.length < 2;
  folderPick.replaceChildren(...folders.map((f) => el('option', { value: f.uri, ...(f.uri === state.folder?.uri ? { selected: '' } : {}) }, f.name)));
  sessions.draw(state.sessions);
  // The plan and its buttons change the list's height: a list at its end stays there.
  const stick = atBottom();
  drawPlan(planRoot, state.plan, (id, edit) => post({ type: 'planItem', id, edit }));
  const ready = !!state.planReady && !state.busy;
  // Disabled from a click until the extension's answer (the state after the command).
  for (const b of planButtons) b.disabled = false;
  planBar.hidden = !ready;
  if (stick) toEnd();
  const s = state.status;
  const busy = !!state.busy;
  document.body.classList.toggle('busy', busy);
  stop.hidden = !busy;
  sendButton.textContent = busy ? 'Steer' : 'Send';
  input.box.placeholder = busy
    ? 'Steer the run: the agent reads this at its next step (Enter sends)'
    : 'Ask the agent (Enter sends, Shift+Enter a new line, @ a file, / a command)';
  statusLine.textContent = s ? (s.state === 'idle' ? `idle${s.reason ? ` (${s.reason.replace(/_/g, ' ')})` : ''}` : s.state === 'waiting' ? 'waiting for you' : 'running…') : '';
  const u = state.usage;
  const parts: string[] = [];
  const total = Number(u?.runInputTokens ?? u?.inputTokens ?? 0) + Number(u?.runOutputTokens ?? u?.outputTokens ?? 0);
  if (total) parts.push(`${tokens(total)} tokens`);
  if (u?.contextWindow && u.contextTokens !== undefined) parts.push(`context ${Math.round((100 * Number(u.contextTokens)) / Number(u.contextWindow))}%`);
  usageLine.textContent = parts.join(' · ');
}

function tokens(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

// ---- messages -----------------------------------------------------------------------------------------------
window.addEventListener('message', (event) => {
  const m = event.data;
  switch (m?.type) {
    case 'reset':
      entries = Array.isArray(m.entries) ? m.entries : [];
      input.remember(entries.filter((e) => e.kind === 'user' || e.kind === 'steer').map((e) => e.text ?? '').filter((t) => t));
      state = m;
      drawAll();
      drawState();
      background.draw(Array.isArray(m.background) ? m.background : []);
      break;
    case 'background':
      background.draw(Array.isArray(m.tasks) ? m.tasks : []);
      break;
    case 'backgroundStopFailed':
      background.stopFailed(String(m.id ?? ''));
      break;
    case 'entry':
      if (typeof m.index === 'number' && m.entry) update(m.index, m.entry);
      break;
    case 'state':
      state = m;
      drawState();
      break;
    case 'files':
      input.showFiles(String(m.query ?? ''), Array.isArray(m.items) ? m.items : []);
      break;
    case 'skills':
      input.showSkills(Array.isArray(m.items) ? m.items : []);
      break;
    case 'image': {
      // An image fetched by id: every thumbnail of it is filled in.
      const id = String(m.id ?? '');
      asked.delete(id);
      if (typeof m.dataUrl !== 'string' || !m.dataUrl.startsWith('data:image/')) break;
      actions.images.set(id, m.dataUrl);
      for (const img of list.querySelectorAll<HTMLImageElement>('img[data-image-id]')) if (img.dataset.imageId === id) img.src = m.dataUrl;
      break;
    }
  }
});

input.box.addEventListener('keydown', () => queueMicrotask(() => vscode.setState({ prompts: input.prompts })));
post({ type: 'ready' });
// Focusing the view (its title, Focus on Conversation View) puts the cursor in the input; loading it does not.
window.addEventListener('focus', () => input.box.focus());
