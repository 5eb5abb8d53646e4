import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as q from '../../src/model/query';

const uri = (s: string) => ({ toString: () => s });
const r = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });

test('locations and location links become LSP Locations (a link gives its target selection)', () => {
  const got = q.locations([
    { uri: uri('file:///w/a.ts'), range: r(1, 2, 1, 5) },
    { targetUri: uri('file:///w/b.ts'), targetRange: r(0, 0, 9, 1), targetSelectionRange: r(3, 4, 3, 8) },
  ]);
  assert.deepEqual(got, [
    { uri: 'file:///w/a.ts', range: r(1, 2, 1, 5) },
    { uri: 'file:///w/b.ts', range: r(3, 4, 3, 8) },
  ]);
  assert.deepEqual(q.locations(undefined), []);
});

test("diagnostics: VS Code's 0-based severity becomes LSP's 1-based; code objects give their value", () => {
  const d = q.diagnostic({ range: r(2, 6, 2, 7), message: "Type 'string' is not assignable to type 'number'.", severity: 0, source: 'ts', code: { value: 2322 } });
  assert.deepEqual(d, { range: r(2, 6, 2, 7), severity: 1, message: "Type 'string' is not assignable to type 'number'.", source: 'ts', code: 2322 });
  assert.equal(q.diagnostic({ range: r(0, 0, 0, 0), message: 'm', severity: 3 }).severity, 4);
  assert.equal('source' in q.diagnostic({ range: r(0, 0, 0, 0), message: 'm', severity: 1 }), false);
});

test('hovers of all providers join into one markdown Hover; none says anything: null', () => {
  const h = q.hover([
    { contents: [{ value: 'function f(): number', language: 'typescript' }, 'Adds.'], range: r(0, 9, 0, 10) },
    { contents: [{ value: '  ' }] },
  ]);
  assert.deepEqual(h, { contents: { kind: 'markdown', value: '```typescript\nfunction f(): number\n```\n\n---\n\nAdds.' }, range: r(0, 9, 0, 10) });
  assert.equal(q.hover([{ contents: [''] }]), null);
  assert.equal(q.hover(undefined), null);
});

test("document symbols keep their tree; VS Code's 0-based SymbolKind becomes LSP's 1-based", () => {
  const got = q.documentSymbols([
    { name: 'C', kind: 4, range: r(0, 0, 5, 1), selectionRange: r(0, 6, 0, 7), children: [{ name: 'm', detail: '()', kind: 5, range: r(1, 2, 1, 9), selectionRange: r(1, 2, 1, 3) }] },
  ]);
  assert.deepEqual(got, [
    { name: 'C', kind: 5, range: r(0, 0, 5, 1), selectionRange: r(0, 6, 0, 7), children: [{ name: 'm', detail: '()', kind: 6, range: r(1, 2, 1, 9), selectionRange: r(1, 2, 1, 3) }] },
  ]);
  assert.deepEqual(q.symbolInformation({ name: 'f', kind: 11, containerName: 'M', location: { uri: uri('file:///w/a.ts'), range: r(2, 0, 2, 3) } }), {
    name: 'f',
    kind: 12,
    location: { uri: 'file:///w/a.ts', range: r(2, 0, 2, 3) },
    containerName: 'M',
  });
});

test("a rename's WorkspaceEdit entries become LSP `changes`; no edits: null", () => {
  const got = q.workspaceEdit([
    [uri('file:///w/a.ts'), [{ range: r(0, 9, 0, 12), newText: 'sum' }]],
    [uri('file:///w/b.ts'), [{ range: r(4, 2, 4, 5), newText: 'sum' }]],
    [uri('file:///w/a.ts'), [{ range: r(7, 0, 7, 3), newText: 'sum' }]],
  ]);
  assert.deepEqual(got, {
    changes: {
      'file:///w/a.ts': [
        { range: r(0, 9, 0, 12), newText: 'sum' },
        { range: r(7, 0, 7, 3), newText: 'sum' },
      ],
      'file:///w/b.ts': [{ range: r(4, 2, 4, 5), newText: 'sum' }],
    },
  });
  assert.equal(q.workspaceEdit([]), null);
});

test("TypeScript's server's diagnostics (a pull) become LSP diagnostics: 1-based line/offset to 0-based, category to severity", () => {
  const got = q.tsDiagnostics({
    type: 'response',
    success: true,
    body: [
      { start: { line: 1, offset: 14 }, end: { line: 1, offset: 19 }, text: "Type 'string' is not assignable to type 'number'.", code: 2322, category: 'error' },
      { start: { line: 3, offset: 1 }, end: { line: 3, offset: 2 }, text: 'w', category: 'warning', source: 'eslint' },
      { start: { line: 2 }, text: 'no end: left out' },
    ],
  });
  assert.deepEqual(got, [
    { range: r(0, 13, 0, 18), severity: 1, message: "Type 'string' is not assignable to type 'number'.", source: 'ts', code: 2322 },
    { range: r(2, 0, 2, 1), severity: 2, message: 'w', source: 'eslint' },
  ]);
  assert.deepEqual(q.tsDiagnostics({ type: 'response', success: true, body: [] }), [], 'a clean file: checked, nothing');
  // An unused name (noUnusedLocals) is a warning, as VS Code's TypeScript shows it, unless its setting says not.
  const unused = { start: { line: 1, offset: 7 }, end: { line: 1, offset: 8 }, text: "'x' is declared but its value is never read.", code: 6133, category: 'error' };
  assert.equal(q.tsDiagnostics({ type: 'response', body: [unused] })?.[0].severity, 2);
  assert.equal(q.tsDiagnostics({ type: 'response', body: [unused] }, false)?.[0].severity, 1);
  assert.equal(q.tsDiagnostics({ type: 'cancelled' }), undefined, 'no answer is not "clean"');
  assert.equal(q.tsDiagnostics(undefined), undefined);
});
