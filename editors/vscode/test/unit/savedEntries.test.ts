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
  disabled = false;
  readonly listeners = new Map<string, () => void>();
  constructor(readonly tag: string) {}
  setAttribute(k: string, v: string): void {
    this.attrs.set(k, v);
  }
  append(...c: (FakeElement | string)[]): void {
    this.children.push(...c);
  }
  addEventListener(type: string, fn: () => void): void {
    this.listeners.set(type, fn);
  }
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
  const actions = { approve: () => {}, rewind: () => {}, busy: () => false, images: new Map<string, string>(), fetchImage: () => {}, cancelSubagent: () => {} };
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
  const actions = { approve: () => {}, rewind: () => {}, busy: () => false, images: known, fetchImage: (id: string) => asked.push(id), cancelSubagent: () => {} };
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

test("a task card draws its child: state, line, latest call and Stop while it runs, its calls inside (closed), a question naming it", async () => {
  const { drawEntry } = await import('../../src/webview/entries');
  const stopped: string[] = [];
  const actions = { approve: () => {}, rewind: () => {}, busy: () => false, images: new Map<string, string>(), fetchImage: () => {}, cancelSubagent: (id: string) => stopped.push(id) };
  const { ConversationLog } = await import('../../src/model/conversation');
  const log = new ConversationLog();
  log.apply({ type: 'tool', call: { runId: 'r', id: 't', name: 'task', phase: 'started', summary: 'general: waits' } });
  log.apply({ type: 'subagent', runId: 'r', child: { toolCallId: 't', id: 'sa-1', description: 'waits', agent: 'general', state: 'running', rounds: 2, lastTool: 'bash', tokens: 40 } });
  log.apply({ type: 'tool', call: { runId: 'r', id: 'c', name: 'bash', phase: 'started', summary: 'sleep 30', subagent: 'sa-1' } });
  const classOf = (d: FakeElement, c: string) => d.all().filter((e) => (e.attrs.get('class') ?? '').split(' ').includes(c));
  let card = drawEntry(log.entries[0], 0, actions) as unknown as FakeElement;
  assert.equal(classOf(card, 'sa-state')[0].textContent, 'running');
  assert.equal(classOf(card, 'sa-line')[0].textContent, 'sa-1 · 2 rounds · 40 tokens');
  assert.equal(classOf(card, 'sa-latest')[0].textContent, 'latest: bash sleep 30');
  const stop = classOf(card, 'sa-stop');
  assert.equal(stop.length, 1, 'Stop while it runs');
  stop[0].listeners.get('click')?.();
  assert.deepEqual([stopped, stop[0].disabled], [['sa-1'], true], 'Stop ends that child alone, once');
  const calls = classOf(card, 'sa-calls')[0];
  assert.equal(calls.tag, 'details');
  assert.equal(calls.open, false, 'closed until opened');
  assert.deepEqual(classOf(calls, 'child').map((c) => [c.attrs.get('data-tool'), c.attrs.get('data-index')]), [['bash', undefined]]);
  // Its question: on the card, naming it; the card says it waits.
  const message = '[subagent sa-1: waits] stepwise wants to run a shell command in demo: sleep 30';
  log.apply({ type: 'approval', approval: { id: 1, question: { kind: 'command', callId: 'c', command: 'sleep 30', subagent: 'sa-1', message } } });
  card = drawEntry(log.entries[0], 0, actions) as unknown as FakeElement;
  assert.equal(classOf(card, 'sa-state')[0].textContent, 'waiting for you');
  assert.equal(classOf(card, 'asker')[0].textContent, 'subagent sa-1: waits asks:');
  // Cancelled: no Stop, no latest call.
  log.apply({ type: 'answered', id: 1, answer: 'allow' });
  log.apply({ type: 'subagent', runId: 'r', child: { toolCallId: 't', id: 'sa-1', description: 'waits', agent: 'general', state: 'cancelled', rounds: 2, tokens: 40 } });
  card = drawEntry(log.entries[0], 0, actions) as unknown as FakeElement;
  assert.equal(classOf(card, 'sa-state')[0].textContent, 'cancelled');
  assert.deepEqual([classOf(card, 'sa-stop').length, classOf(card, 'sa-latest').length], [0, 0]);
});
