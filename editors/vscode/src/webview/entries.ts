// Draws one conversation entry: a user turn (with "Rewind to here"), the model's text (markdown, drawn when
// it comes near the screen, so a long conversation opens fast), a tool call's card (its command or path,
// the step it served, the output collapsed, an error state, the approval's buttons), or a small note.
import { CHOICES, questionText, type Choice } from '../model/ask';
import { savedEndLine, savedEnds } from '../model/background';
import { diagnosticHref, diagnosticLines, errorCount, uncheckedCount, type DiagnosticLine, type Entry } from '../model/conversation';
import { imagesRow } from './attachments';
import { el } from './dom';
import { renderMarkdown } from './markdown';
import { subagentPart } from './subagent';

export interface EntryActions {
  approve(id: number, answer: Choice): void;
  rewind(index: number): void;
  /** Whether a run is going on (no rewind then). */
  busy(): boolean;
  /** Images fetched so far, by id (their data URLs). */
  images: Map<string, string>;
  /** Asks for an image known only by id; it comes back as a data URL. */
  fetchImage(id: string): void;
  /** Stops a `task` call's child alone (`sa-<n>`). */
  cancelSubagent(id: string): void;
}

const TOOL_ICON: Record<string, string> = { running: '◌', done: '✓', failed: '✗' };
export function drawEntry(e: Entry, index: number, actions: EntryActions): HTMLElement {
  switch (e.kind) {
    case 'user':
    case 'steer':
      return userTurn(e, index, actions);
    case 'assistant': {
      const div = el('div', { class: 'entry assistant markdown', 'data-index': String(index) });
      div.textContent = e.text ?? '';
      div.dataset.pending = '1';
      return div;
    }
    case 'tool':
      return toolCard(e, index, actions);
    case 'diagnostics': {
      // After a reload: the block the model was told, as the harness's words, never the user's.
      const lines = diagnosticLines(e.text ?? '');
      const div = el('div', { class: 'entry note diagnostics', 'data-index': String(index) });
      div.append(diagnosticsBox(lines, true));
      return div;
    }
    case 'background': {
      // After a reload: the background tasks' ends the model was told (`<background-results>`), never the user's words.
      const div = el('div', { class: 'entry note background', 'data-index': String(index) });
      for (const t of savedEnds(e.text ?? '')) {
        div.append(el('div', { class: 'bg-end', 'data-task': t.id }, savedEndLine(t)));
        if (t.output) div.append(el('details', { class: 'output' }, el('summary', {}, `${t.id} output`), el('pre', {}, t.output)));
      }
      return div;
    }
    default: {
      const div = el('div', { class: `entry note ${e.kind}`, 'data-index': String(index) }, noteIcon(e.kind), el('span', {}, e.text ?? ''));
      if (e.approval) div.append(approvalRow(e, actions));
      return div;
    }
  }
}

/** Draws the markdown of an assistant entry (called when it nears the screen or while it streams). */
export function drawMarkdown(div: HTMLElement, text: string): void {
  div.innerHTML = renderMarkdown(text);
  delete div.dataset.pending;
}

function noteIcon(kind: string): string {
  return kind === 'reminder' ? '⚑ ' : kind === 'planEdit' ? '' : '· ';
}

function userTurn(e: Entry, index: number, actions: EntryActions): HTMLElement {
  const head = el('div', { class: 'turn-head' }, el('span', { class: 'who' }, e.kind === 'steer' ? 'You (steer)' : 'You'));
  if (e.kind === 'user' && e.runId) {
    const b = el('button', { class: 'link rewind', title: 'Put the files, the conversation and the plan back as they were before this turn' }, 'Rewind to here');
    b.addEventListener('click', () => !actions.busy() && actions.rewind(index));
    head.append(b);
  }
  const text = e.text ? el('div', { class: 'user-text' }, e.text) : undefined;
  return el('div', { class: `entry turn ${e.kind}`, 'data-index': String(index) }, head, text, imagesRow(e.images, actions.images, actions.fetchImage));
}

/** A call's card; a child's (`index` none) is drawn inside its `task` card. */
function toolCard(e: Entry, index: number | undefined, actions: EntryActions): HTMLElement {
  const t = e.tool ?? { id: '', name: 'tool' };
  const state = t.state ?? 'done';
  const card = el('div', { class: `entry card tool ${state}${index === undefined ? ' child' : ''}`, 'data-index': index === undefined ? undefined : String(index), 'data-tool': t.name });
  const head = el(
    'div',
    { class: 'card-head' },
    el('span', { class: `icon ${state}`, 'aria-label': state }, TOOL_ICON[state] ?? '·'),
    el('span', { class: 'tool-name' }, t.name),
    t.summary ? el('code', { class: 'summary', title: t.summary }, t.summary) : undefined,
    errorCount(t.diagnostics) > 0 ? el('span', { class: 'diag-count', title: 'errors the model was told of after this round' }, `⚠ ${errorCount(t.diagnostics)}`) : undefined,
  );
  card.append(head);
  if (t.step) card.append(el('div', { class: 'step' }, `step: ${t.step}`));
  const images = imagesRow(e.images, actions.images, actions.fetchImage);
  if (images) card.append(images);
  const child = subagentPart(e, actions.cancelSubagent, (c) => toolCard(c, undefined, actions));
  if (child) card.append(child);
  if (t.output !== undefined && t.output !== '') {
    const details = el('details', { class: 'output', 'data-keep': t.id ? `output-${t.id}` : undefined }, el('summary', {}, t.isError ? 'error' : 'output'), el('pre', {}, t.output));
    if (t.isError) details.open = true;
    card.append(details);
  }
  if (t.diagnostics && t.diagnostics.length > 0) card.append(diagnosticsBox(t.diagnostics, false));
  if (e.approval) card.append(approvalRow(e, actions));
  return card;
}

/** What the model was told of errors after the round: a count in the summary, the lines (links to their places) when opened. */
function diagnosticsBox(lines: DiagnosticLine[], open: boolean): HTMLElement {
  const errors = errorCount(lines);
  const unchecked = uncheckedCount(lines);
  const parts = [errors > 0 ? `${errors} ${errors === 1 ? 'error' : 'errors'}` : '', unchecked > 0 ? `${unchecked} not checked` : ''].filter((p) => p);
  const list = el('ul', { class: 'diagnostic-lines' });
  for (const l of lines) {
    const href = diagnosticHref(l);
    list.append(el('li', l.path ? {} : { class: 'note' }, href ? el('a', { href, title: 'Open' }, l.text) : l.text));
  }
  const details = el('details', { class: 'diagnostics' }, el('summary', {}, `⚠ told the model: ${parts.join(', ')}`), list);
  details.open = open;
  return details;
}

function approvalRow(e: Entry, actions: EntryActions): HTMLElement {
  const a = e.approval;
  if (!a) return el('div');
  if (a.answer) {
    const done = CHOICES.find((c) => c.choice === a.answer)?.done ?? 'Not answered';
    return el('div', { class: `approval answered ${a.answer === 'allow' || a.answer === 'allowSession' ? 'allowed' : 'denied'}` }, done);
  }
  const q = questionText(a.question);
  const row = el('div', { class: 'approval', role: 'group', 'aria-label': q.title, 'data-kind': String(a.question.kind ?? '') });
  // A child's question names the child (its card is its `task` call's).
  if (q.asker) row.append(el('div', { class: 'asker' }, `subagent ${q.asker} asks:`));
  row.append(el('div', { class: 'question' }, q.title));
  if (q.code) row.append(el('pre', { class: 'concerns' }, q.code));
  if (q.detail) row.append(el('div', { class: 'detail' }, q.detail));
  const buttons = el('div', { class: 'buttons' });
  CHOICES.forEach(({ choice, label }, i) => {
    const b = el('button', { class: i === 0 ? 'primary' : 'secondary', 'data-answer': choice }, label);
    b.addEventListener('click', () => {
      buttons.querySelectorAll('button').forEach((x) => (x.disabled = true));
      actions.approve(a.id, choice);
    });
    buttons.append(b);
  });
  row.append(buttons);
  return row;
}
