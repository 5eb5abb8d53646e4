// The input: a textarea where Enter sends and Shift+Enter starts a new line, Up (on the first line) recalls
// earlier prompts, `@` offers the folder's files (their path goes in), `/` at the start the slash commands and
// the folder's skills (asked of the extension each time a `/` starts the input; they come with descriptions).
import { slashChoices } from '../model/conversation';
import { el } from './dom';

export interface InputActions {
  send(text: string): void;
  /** Whether images wait to be sent (then an empty text sends too). */
  hasImages(): boolean;
  /** Asks for the files matching `query`; they come back through `showFiles`. */
  files(query: string): void;
  /** Asks for the folder's skills; they come back through `showSkills`. */
  skills(): void;
}

type Suggestion = { label: string; detail?: string; insert: string };

const MAX_HISTORY = 200;

export class Input {
  readonly box = el('textarea', { rows: '3', placeholder: 'Ask the agent (Enter sends, Shift+Enter a new line, @ a file, / a command)', 'aria-label': 'Message for the agent' });
  private readonly menu = el('ul', { class: 'suggest', role: 'listbox' });
  readonly root = el('div', { class: 'input' }, this.menu, this.box);
  private history: string[] = [];
  private recall = -1;
  private draft = '';
  private items: Suggestion[] = [];
  private selected = 0;
  /** Where the word being completed starts (`@` or `/`). */
  private anchor = -1;
  /** The folder's skills, as last told. */
  private skills: { name: string; description: string }[] = [];

  constructor(private readonly actions: InputActions, saved: string[] = []) {
    this.history = saved.slice(-MAX_HISTORY);
    this.menu.hidden = true;
    this.box.addEventListener('keydown', (e) => this.key(e));
    this.box.addEventListener('input', () => this.typed());
  }

  /** The conversation's own prompts come first in the history (after a reload too). */
  remember(prompts: string[]): void {
    const seen = new Set(this.history);
    this.history = [...prompts.filter((p) => !seen.has(p)), ...this.history].slice(-MAX_HISTORY);
    this.recall = -1;
  }

  get prompts(): string[] {
    return this.history;
  }

  /** The files for the `@` being typed. */
  showFiles(query: string, files: string[]): void {
    const word = this.word();
    if (!word || word.kind !== '@' || word.text !== query) return;
    this.show(files.map((f) => ({ label: f, insert: `@${f} ` })));
  }

  /** The folder's skills: the menu shows them if a `/` is still being typed. */
  showSkills(skills: { name: string; description: string }[]): void {
    this.skills = skills;
    if (this.word()?.kind === '/') this.typed();
  }

  private key(e: KeyboardEvent): void {
    if (!this.menu.hidden) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        this.selected = (this.selected + (e.key === 'ArrowDown' ? 1 : this.items.length - 1)) % this.items.length;
        this.drawMenu();
        return;
      }
      if ((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab') {
        e.preventDefault();
        this.pick(this.items[this.selected]);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        this.hide();
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      const text = this.box.value;
      if (!text.trim() && !this.actions.hasImages()) return;
      if (text.trim() && this.history[this.history.length - 1] !== text) this.history.push(text);
      if (this.history.length > MAX_HISTORY) this.history.shift();
      this.recall = -1;
      this.box.value = '';
      this.actions.send(text);
      return;
    }
    const start = this.box.selectionStart;
    if (e.key === 'ArrowUp' && !this.box.value.slice(0, start).includes('\n') && this.history.length > 0) {
      e.preventDefault();
      if (this.recall < 0) {
        this.draft = this.box.value;
        this.recall = this.history.length;
      }
      this.recall = Math.max(0, this.recall - 1);
      this.box.value = this.history[this.recall];
    } else if (e.key === 'ArrowDown' && this.recall >= 0 && !this.box.value.slice(start).includes('\n')) {
      e.preventDefault();
      this.recall += 1;
      if (this.recall >= this.history.length) {
        this.recall = -1;
        this.box.value = this.draft;
      } else this.box.value = this.history[this.recall];
    }
  }

  /** The `@word` or leading `/word` before the cursor. */
  private word(): { kind: '@' | '/'; text: string; start: number } | undefined {
    const before = this.box.value.slice(0, this.box.selectionStart);
    const at = /(^|\s)@([^\s@]*)$/.exec(before);
    if (at) return { kind: '@', text: at[2], start: before.length - at[2].length - 1 };
    const slash = /^\/([a-z0-9-]*)$/.exec(before);
    if (slash) return { kind: '/', text: slash[1], start: 0 };
    return undefined;
  }

  private typed(): void {
    const w = this.word();
    if (!w) return this.hide();
    this.anchor = w.start;
    if (w.kind === '@') return this.actions.files(w.text);
    // The `/` alone: the skills are asked for again (one may have been added since).
    if (w.text === '' && this.menu.hidden) this.actions.skills();
    this.show(slashChoices(w.text, this.skills).map((c) => ({ label: `/${c.name}`, detail: c.detail, insert: `/${c.name} ` })));
  }

  private show(items: Suggestion[]): void {
    this.items = items;
    this.selected = 0;
    if (items.length === 0) return this.hide();
    this.drawMenu();
    this.menu.hidden = false;
  }

  private drawMenu(): void {
    this.menu.replaceChildren(
      ...this.items.map((s, i) => {
        const li = el('li', { role: 'option', class: i === this.selected ? 'selected' : '', 'aria-selected': String(i === this.selected), title: s.detail ?? '' }, el('span', {}, s.label), s.detail ? el('span', { class: 'detail' }, s.detail) : undefined);
        li.addEventListener('mousedown', (e) => {
          e.preventDefault();
          this.pick(s);
        });
        return li;
      }),
    );
  }

  private hide(): void {
    this.menu.hidden = true;
    this.items = [];
  }

  private pick(s: Suggestion | undefined): void {
    if (!s || this.anchor < 0) return this.hide();
    const v = this.box.value;
    const end = this.box.selectionStart;
    this.box.value = v.slice(0, this.anchor) + s.insert + v.slice(end);
    const caret = this.anchor + s.insert.length;
    this.box.setSelectionRange(caret, caret);
    this.hide();
    this.box.focus();
  }
}
