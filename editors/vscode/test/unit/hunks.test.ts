import { test } from 'node:test';
import assert from 'node:assert/strict';

import { hunks } from '../../src/model/hunks';

test('no change, no hunk', () => {
  assert.deepEqual(hunks('a\nb\n', 'a\nb\n'), []);
});

test('three separate changes are three hunks, at their lines', () => {
  const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].join('\n');
  const after = ['a', 'B', 'c', 'd', 'e', 'd2', 'f', 'g', 'h'].join('\n');
  assert.deepEqual(hunks(before, after), [
    { start: 1, count: 1, oldStart: 1, oldCount: 1 },
    { start: 5, count: 1, oldStart: 5, oldCount: 0 },
    { start: 9, count: 0, oldStart: 8, oldCount: 1 },
  ]);
});

test('a created file is one hunk of all its lines; a deleted one removes all', () => {
  assert.deepEqual(hunks('', 'x\ny\n'), [{ start: 0, count: 2, oldStart: 0, oldCount: 0 }]);
  assert.deepEqual(hunks('x\ny\n', ''), [{ start: 0, count: 0, oldStart: 0, oldCount: 2 }]);
});

test('a rewrite past the bound is one hunk', () => {
  const a = Array.from({ length: 3000 }, (_, i) => `a${i}`).join('\n');
  const b = Array.from({ length: 3000 }, (_, i) => `b${i}`).join('\n');
  assert.deepEqual(hunks(a, b), [{ start: 0, count: 3000, oldStart: 0, oldCount: 3000 }]);
});
