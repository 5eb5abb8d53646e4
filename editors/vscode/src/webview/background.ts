// The folder's background tasks, between the conversation and the input: each with its command, how it
// stands (running, exited N, killed by ...), the tail of its output as it prints, and Stop while it runs
// (Dismiss once it ended). Cards are kept by task id and updated in place, so an opened or closed output and
// its scroll position survive the updates (up to ten a second while a task prints).
import { plainTail, type BackgroundTask } from '../model/background';
import { el } from './dom';

export interface BackgroundActions {
  stop(id: string): void;
  dismiss(id: string): void;
}

interface Card {
  root: HTMLElement;
  icon: HTMLElement;
  state: HTMLElement;
  button: HTMLButtonElement;
  pre: HTMLElement;
  ended: boolean;
}

/** How a task stands, as a class: running, done (exited 0), failed (another code), killed. */
function standing(t: BackgroundTask): 'running' | 'done' | 'failed' | 'killed' {
  if (t.running) return 'running';
  if (/^exited 0$/.test(t.state)) return 'done';
  return /^killed/.test(t.state) ? 'killed' : 'failed';
}

const ICON = { running: '●', done: '✓', failed: '✗', killed: '■' };

export class BackgroundList {
  readonly root = el('section', { class: 'background', 'aria-label': 'Background tasks' });
  private readonly title = el('div', { class: 'background-title' });
  private readonly cards = new Map<string, Card>();
  /** Tasks whose Stop was clicked, until they end (or the kill fails). */
  private readonly stopping = new Set<string>();

  constructor(private readonly actions: BackgroundActions) {
    this.root.append(this.title);
    this.root.hidden = true;
  }

  draw(tasks: BackgroundTask[]): void {
    const ids = new Set(tasks.map((t) => t.id));
    for (const [id, card] of this.cards)
      if (!ids.has(id)) {
        card.root.remove();
        this.cards.delete(id);
      }
    let after: Element = this.title;
    for (const t of tasks) {
      if (!t.running) this.stopping.delete(t.id);
      const card = this.cards.get(t.id) ?? this.make(t);
      // Moved only when out of place: a node moved in the DOM loses its scroll position.
      if (after.nextElementSibling !== card.root) after.after(card.root);
      after = card.root;
      this.update(card, t);
    }
    const running = tasks.filter((t) => t.running).length;
    this.title.textContent = `Background tasks · ${running} running`;
    this.root.hidden = tasks.length === 0;
  }

  /** The Stop of `id` failed: its button comes back. */
  stopFailed(id: string): void {
    this.stopping.delete(id);
    const card = this.cards.get(id);
    if (card && !card.ended) {
      card.button.disabled = false;
      card.button.textContent = 'Stop';
    }
  }

  private make(t: BackgroundTask): Card {
    const icon = el('span', { class: 'icon' });
    const state = el('span', { class: 'bg-state' });
    const button = el('button', { class: 'secondary bg-stop' });
    const pre = el('pre', { class: 'bg-tail' });
    // The command on a line of its own: the sidebar is narrow, and the command is what names the task.
    const head = el('div', { class: 'card-head' }, icon, el('span', { class: 'tool-name bg-id' }, t.id), state, button);
    const command = el('code', { class: 'bg-command', title: t.command }, t.command);
    const output = el('details', { class: 'output' }, el('summary', {}, 'output'), pre);
    output.open = true;
    const root = el('div', { class: 'card bg-task', 'data-task': t.id }, head, command, output);
    const card: Card = { root, icon, state, button, pre, ended: false };
    button.addEventListener('click', () => {
      if (card.ended) return this.actions.dismiss(t.id);
      this.stopping.add(t.id);
      button.disabled = true;
      button.textContent = 'Stopping…';
      this.actions.stop(t.id);
    });
    this.cards.set(t.id, card);
    return card;
  }

  private update(card: Card, t: BackgroundTask): void {
    const s = standing(t);
    card.root.className = `card bg-task ${s}`;
    card.icon.className = `icon ${s}`;
    card.icon.textContent = ICON[s];
    card.icon.setAttribute('aria-label', s);
    card.state.textContent = t.state;
    card.ended = !t.running;
    const stopping = this.stopping.has(t.id);
    card.button.className = card.ended ? 'icon-button bg-dismiss' : 'secondary bg-stop';
    card.button.textContent = card.ended ? '✕' : stopping ? 'Stopping…' : 'Stop';
    card.button.title = card.ended ? 'Dismiss: take it off the list' : 'Stop the task: end its whole process tree';
    card.button.setAttribute('aria-label', `${card.ended ? 'Dismiss' : 'Stop'} ${t.id}`);
    card.button.disabled = !card.ended && stopping;
    const text = plainTail(t.tail).replace(/\n+$/, '');
    if (card.pre.textContent !== text) {
      const stick = card.pre.scrollHeight - card.pre.scrollTop - card.pre.clientHeight < 20;
      card.pre.textContent = text || '(no output yet)';
      card.pre.classList.toggle('none', !text);
      if (stick) card.pre.scrollTop = card.pre.scrollHeight;
    }
  }
}
