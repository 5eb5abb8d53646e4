// When a document's diagnostics are those of the version the agent wrote (model/settling.ts): by a publish, by
// quiet only once its server is known to be there, given up soon when nothing shows a server, never "settled"
// for a file nobody checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Settling } from '../../src/model/settling';

const timing = { floorMs: 300, firstQuietMs: 1500, lookMs: 1500 };

test('a change of diagnostics after the document reached the version settles it, an older one does not', () => {
  const s = new Settling(timing);
  s.changed('a', 1, 'typescript', 0);
  s.publishedAt('a', 1, 100);
  assert.equal(s.settled('a', 2, 150), false, 'published for version 1 only');
  s.changed('a', 2, 'typescript', 200);
  assert.equal(s.settled('a', 2, 210), false);
  s.publishedAt('a', 2, 260);
  assert.equal(s.settled('a', 2, 261), true);
  assert.equal(s.standing('b', undefined, 0), 'waiting', 'never published: not settled');
  s.publishedAt('b', undefined, 5);
  assert.equal(s.standing('b', undefined, 6), 'settled', 'a closed file: any publish');
});

test("a language seen publishing settles by quiet after twice its usual time; its first publish (the server's start) is not learned", () => {
  const s = new Settling(timing);
  s.changed('a', 1, 'typescript', 0);
  s.publishedAt('a', 1, 5000); // the server's start
  s.changed('a', 2, 'typescript', 6000);
  assert.equal(s.nextCheck('a', 2, 6000), undefined, 'nothing learned from the start: only an event or a look');
  assert.equal(s.needsLook('a', 2, 6000), true);
  s.publishedAt('a', 2, 6400); // this server takes 400 ms
  s.changed('a', 3, 'typescript', 7000);
  assert.equal(s.needsLook('a', 3, 7000), false, 'known: no look needed');
  assert.equal(s.settled('a', 3, 7799), false, 'within twice its time');
  assert.equal(s.nextCheck('a', 3, 7700), 100);
  assert.equal(s.standing('a', 3, 7800), 'settled');
});

test('plain text, which no server checks, is settled at once', () => {
  const s = new Settling(timing);
  s.changed('t', 1, 'plaintext', 50);
  assert.equal(s.standing('t', 1, 50), 'settled');
  assert.equal(s.needsLook('t', 1, 50), false);
  // A version not reached yet is not.
  assert.equal(s.standing('t', 2, 1e9), 'waiting');
  assert.equal(s.nextCheck('t', 2, 0), undefined);
});

test("a language never seen publishing waits for a look; the server's answer starts the quiet, none gives up soon", () => {
  const s = new Settling(timing);
  s.changed('a', 1, 'typescript', 0);
  // No look yet: only an event or a look can end the wait (a server may still be starting).
  assert.equal(s.standing('a', 1, 1e6), 'waiting');
  assert.equal(s.nextCheck('a', 1, 0), undefined);
  assert.equal(s.needsLook('a', 1, 0), true);
  // The server answered the look at 3000 (its start took that long): quiet from then.
  s.looked('a', 1, true, 3000);
  assert.equal(s.needsLook('a', 1, 3000), false, 'looked at this version');
  assert.equal(s.standing('a', 1, 4499), 'waiting');
  assert.equal(s.nextCheck('a', 1, 4000), 500);
  assert.equal(s.standing('a', 1, 4500), 'settled');
  // A look at an older version does not count for the next one.
  s.changed('a', 2, 'typescript', 5000);
  assert.equal(s.standing('a', 2, 1e6), 'waiting');
  assert.equal(s.needsLook('a', 2, 5000), true);

  // No server answers (nothing found): given up lookMs after the change, never settled.
  s.changed('m', 1, 'markdown', 100);
  s.looked('m', 1, false, 120);
  assert.equal(s.standing('m', 1, 1599), 'waiting');
  assert.equal(s.nextCheck('m', 1, 1000), 600);
  assert.equal(s.standing('m', 1, 1600), 'given-up');
  assert.equal(s.settled('m', 1, 1e6), false);
  // ...unless its diagnostics change after all.
  s.publishedAt('m', 1, 2000);
  assert.equal(s.standing('m', 1, 2001), 'settled');
  // A look answered late (a server that was starting, then found nothing) gives up when it answers.
  s.changed('n', 1, 'markdown', 0);
  s.looked('n', 1, false, 4000);
  assert.equal(s.standing('n', 1, 4000), 'given-up');
});

test('the same version again keeps the time it was first reached; forget clears all', () => {
  const s = new Settling(timing);
  s.changed('a', 1, 'typescript', 0);
  s.looked('a', 1, true, 10);
  s.changed('a', 1, 'typescript', 1000); // opened by the answerer after the open event
  assert.equal(s.standing('a', 1, 1510), 'settled', 'quiet counted from the look, not from the repeat');
  s.forget('a');
  assert.equal(s.standing('a', 1, 1e6), 'waiting');
  assert.equal(s.nextCheck('a', 1, 0), undefined);
});
