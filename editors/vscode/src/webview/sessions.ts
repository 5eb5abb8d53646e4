// The folder's sessions above the conversation: a tab per session (its title, how it stands, its plan's progress;
// a worktree session marked, with its files not applied yet; a badge while a question of it waits), New Session
// and New Session in Worktree; under the tabs, for a session beside the folder's own: its worktree and Apply,
// Close, Discard. Clicking a tab brings that session into view.
import { MAIN, type SessionTab } from '../model/sessions';
import { el } from './dom';

export interface SessionActions {
  show(session: string): void;
  /** `new`, `newWorktree`, `apply`, `close`, `discard`. */
  act(action: string, session?: string): void;
}

const MARK: Record<string, string> = { running: '◐', waiting: '●', idle: '○', closed: '–' };

const files = (n: number) => (n === 1 ? '1 file' : `${n} files`);

/** How a tab reads to a screen reader (and in its tooltip). */
function describe(t: SessionTab): string {
  const parts = [t.title, t.state === 'waiting' ? 'waiting for you' : t.state];
  if (t.progress) parts.push(`plan ${t.progress}`);
  if (t.worktree) parts.push(`in a worktree${t.unapplied ? `, ${files(t.unapplied)} not applied` : ''}`);
  if (t.asks) parts.push('a question waits');
  return parts.join(', ');
}

export class SessionStrip {
  private readonly tabs = el('div', { class: 'session-tabs', role: 'tablist', 'aria-label': 'Sessions' });
  private readonly bar = el('div', { class: 'session-bar' });
  readonly root = el('div', { class: 'sessions' });

  constructor(private readonly actions: SessionActions) {
    const add = el('button', { class: 'icon-button session-new', title: 'New Session', 'aria-label': 'New Session' }, '+');
    add.addEventListener('click', () => actions.act('new'));
    const tree = el('button', { class: 'icon-button session-new-worktree', title: 'New Session in Worktree: it works in a git worktree of its own until you apply it', 'aria-label': 'New Session in Worktree' }, '⎇+');
    tree.addEventListener('click', () => actions.act('newWorktree'));
    this.root.append(el('div', { class: 'session-row' }, this.tabs, add, tree), this.bar);
  }

  draw(sessions: SessionTab[] | undefined): void {
    const list = sessions ?? [];
    this.tabs.replaceChildren(...list.map((t) => this.tab(t)));
    // Many sessions scroll: the one in view stays in sight.
    this.tabs.querySelector<HTMLElement>('.viewed')?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    const viewed = list.find((t) => t.viewed);
    this.bar.replaceChildren();
    this.bar.hidden = !viewed || viewed.session === MAIN;
    if (!viewed || this.bar.hidden) return;
    if (viewed.worktree) {
      const unapplied = viewed.unapplied ?? 0;
      this.bar.append(
        el('span', { class: 'worktree', title: viewed.worktree }, `⎇ ${viewed.branch ?? 'worktree'}`),
        el('span', { class: 'unapplied' }, unapplied > 0 ? ` · ${files(unapplied)} not applied` : ' · nothing to apply'),
      );
    } else this.bar.append(el('span', { class: 'in-place' }, 'works in the folder'));
    const tools = el('span', { class: 'session-tools' });
    const button = (action: string, label: string, title: string, primary = false) => {
      const b = el('button', { class: primary ? 'primary' : 'secondary', 'data-action': action, title }, label);
      b.addEventListener('click', () => this.actions.act(action, viewed.session));
      tools.append(b);
    };
    if (viewed.worktree) button('apply', 'Apply', "Bring this session's changes into the folder, then review them", (viewed.unapplied ?? 0) > 0);
    if (viewed.state !== 'closed') button('close', 'Close', 'Close the session; it stays saved, with its worktree, to reopen');
    button('discard', 'Discard', 'Forget the session and remove its worktree');
    this.bar.append(tools);
  }

  private tab(t: SessionTab): HTMLElement {
    const classes = ['session-tab', t.state, t.viewed ? 'viewed' : '', t.asks ? 'asks' : '', t.worktree ? 'worktree' : ''].filter((c) => c);
    const b = el(
      'button',
      { class: classes.join(' '), role: 'tab', 'aria-selected': String(t.viewed), 'aria-label': describe(t), title: describe(t), 'data-session': t.session },
      el('span', { class: `mark ${t.state}` }, MARK[t.state] ?? '○'),
      el('span', { class: 'title' }, t.title),
      t.progress ? el('span', { class: 'progress' }, t.progress) : undefined,
      t.worktree ? el('span', { class: 'tree' }, t.unapplied ? `⎇ ${t.unapplied}` : '⎇') : undefined,
      t.asks ? el('span', { class: 'badge', 'aria-hidden': 'true' }, '?') : undefined,
    );
    b.addEventListener('click', () => !t.viewed && this.actions.show(t.session));
    return b;
  }
}
