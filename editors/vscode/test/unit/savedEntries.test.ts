// After a reload the Conversation view draws the saved conversation: the harness's blocks the model was told
// (`<background-results>`, `<diagnostics>`) are drawn as what they are, never as the user's words.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { savedEndLine, savedEnds } from '../../src/model/background';
import { entriesOf } from '../../src/model/conversation';

/** Just enough of a DOM for `el` (webview/dom.ts): elements with attributes, children and their text. */
class FakeElement {
  readonly attrs = new Map<string, string>();
  readonly children: (FakeElement | string)[] = [];
  open = false;
  constructor(readonly tag: string) {}
  setAttribute(k: string, v: string): void {
    this.attrs.set(k, v);
  }
  append(...c: (FakeElement | string)[]): void {
    this.children.push(...c);
  }
  addEventListener(): void {}
  get textContent(): string {
    return this.children.map((c) => (typeof c === 'string' ? c : c.textContent)).join('');
  }
  set textContent(t: string) {
    this.children.splice(0, this.children.length, t);
  }
  get dataset(): Record<string, string> {
    return {};
  }
  /** Every element below, this one first. */
  all(): FakeElement[] {
    return [this, ...this.children.flatMap((c) => (typeof c === 'string' ? [] : c.all()))];
  }
}
(globalThis as { document?: unknown }).document = { createElement: (tag: string) => new FakeElement(tag) };

const BLOCK = '<background-results>\nbg-1: exited 3\nbuild failed: missing script dev\nbg-2: killed by the user (SIGTERM)\n</background-results>';
const DIAGNOSTICS = "<diagnostics>\nsrc/a.ts:3:7: error: Type 'string' is not assignable to type 'number'. (ts)\n</diagnostics>";
const SAVED = {
  entries: [
    { kind: 'user', runId: 'r', text: 'start the build' },
    { kind: 'background', runId: 'r', text: BLOCK },
    { kind: 'diagnostics', runId: 'r', text: DIAGNOSTICS },
  ],
};

test('a saved <background-results> block is read as the tasks\' ends, each with its output', () => {
  const [, bg] = entriesOf(SAVED);
  assert.equal(bg.kind, 'background');
  const ends = savedEnds(bg.text ?? '');
  assert.deepEqual(ends, [
    { id: 'bg-1', state: 'exited 3', output: 'build failed: missing script dev' },
    { id: 'bg-2', state: 'killed by the user (SIGTERM)', output: '' },
  ]);
  assert.deepEqual(ends.map(savedEndLine), ['⏹ bg-1 exited 3', '⏹ bg-2 killed by the user (SIGTERM)']);
  assert.deepEqual(savedEnds('<background-results>\n</background-results>'), []);
});

test('after a reload the view draws background ends and diagnostics as notes, only the prompt as the user\'s turn', async () => {
  const { drawEntry } = await import('../../src/webview/entries');
  const actions = { approve: () => {}, rewind: () => {}, busy: () => false, images: new Map<string, string>(), fetchImage: () => {} };
  const drawn = entriesOf(SAVED).map((e, i) => drawEntry(e, i, actions) as unknown as FakeElement);
  const classes = drawn.map((d) => d.attrs.get('class'));
  assert.deepEqual(classes, ['entry turn user', 'entry note background', 'entry note diagnostics']);
  const [, bg, diag] = drawn;
  assert.deepEqual(
    bg.all().filter((e) => e.attrs.get('class') === 'bg-end').map((e) => [e.attrs.get('data-task'), e.textContent]),
    [
      ['bg-1', '⏹ bg-1 exited 3'],
      ['bg-2', '⏹ bg-2 killed by the user (SIGTERM)'],
    ],
  );
  assert.ok(bg.textContent.includes('build failed: missing script dev'), bg.textContent);
  assert.ok(!bg.textContent.includes('<background-results>'), 'the tags are not shown');
  assert.ok(diag.textContent.includes("src/a.ts:3:7: error: Type 'string'"), diag.textContent);
  assert.ok(!diag.textContent.includes('<diagnostics>'), 'the tags are not shown');
  // Neither is a turn of the user's.
  for (const d of [bg, diag]) assert.ok(!d.all().some((e) => /\bturn\b|user-text/.test(e.attrs.get('class') ?? '')));
});

test('after a reload a prompt\'s images are drawn as thumbnails, those not fetched yet asked for by id', async () => {
  const { drawEntry } = await import('../../src/webview/entries');
  const asked: string[] = [];
  const known = new Map([['b2', 'data:image/png;base64,iVBO']]);
  const actions = { approve: () => {}, rewind: () => {}, busy: () => false, images: known, fetchImage: (id: string) => asked.push(id) };
  const saved = {
    entries: [
      { kind: 'user', runId: 'r', text: 'what is wrong here?', images: [{ mediaType: 'image/png', id: 'a1' }, { mediaType: 'image/png', id: 'b2' }, { mediaType: 'image/png' }] },
      { kind: 'user', runId: 'r2', images: [{ mediaType: 'image/jpeg', id: 'c3' }] },
      { kind: 'tool', runId: 'r2', tool: { id: 't', name: 'read_file', summary: 'shot.png', output: 'Image shot.png (image/png, 6x4, 1 KB) follows.' }, images: [{ mediaType: 'image/png', id: 'd4' }] },
    ],
  };
  const entries = entriesOf(saved);
  assert.deepEqual(entries[0].images, [{ mediaType: 'image/png', id: 'a1' }, { mediaType: 'image/png', id: 'b2' }], 'one without an id is dropped');
  const drawn = entries.map((e, i) => drawEntry(e, i, actions) as unknown as FakeElement);
  const thumbs = (d: FakeElement) => d.all().filter((e) => e.tag === 'img').map((e) => [e.attrs.get('data-image-id'), e.attrs.get('src')]);
  assert.deepEqual(thumbs(drawn[0]), [['a1', undefined], ['b2', 'data:image/png;base64,iVBO']]);
  assert.equal(drawn[0].all().find((e) => e.attrs.get('class') === 'user-text')?.textContent, 'what is wrong here?');
  // A prompt of images alone: no text, its image.
  assert.equal(drawn[1].all().filter((e) => e.attrs.get('class') === 'user-text').length, 0);
  assert.deepEqual(thumbs(drawn[1]), [['c3', undefined]]);
  assert.deepEqual(thumbs(drawn[2]), [['d4', undefined]], 'a tool\'s image in its card');
  assert.deepEqual(asked, ['a1', 'c3', 'd4'], 'what the view has is not asked for');
});
