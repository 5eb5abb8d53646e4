import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { Folders, isBusy } from '../../src/model/folders';

const WS = 'file:///w/demo';
const WS2 = 'file:///w/other';

test('one record per folder holds its plan, run state, usage and prompt', () => {
  const folders = new Folders();
  assert.equal(folders.get(WS), undefined);
  folders.ensure(WS).prompt = 'add a farewell';
  assert.ok(folders.updatePlan({ workspace: WS, items: [{ id: 1, text: 'a', status: 'pending' }], revision: 4, by: 'user' }));
  folders.ensure(WS).status = { workspace: WS, state: 'running', runId: 'r1' };
  folders.ensure(WS).usage = { workspace: WS, inputTokens: 10 };
  const f = folders.get(WS);
  assert.equal(f?.prompt, 'add a farewell');
  assert.equal(f?.plan?.items.length, 1);
  assert.equal(f?.plan?.revision, 4);
  assert.equal(f?.plan?.by, 'user');
  assert.equal(f?.planUpdates, 1);
  assert.equal(folders.all().length, 1);
  assert.ok(folders.busy(WS));
  assert.ok(folders.anyBusy());
  assert.equal(folders.firstBusy(), WS);
  assert.equal(folders.busy(WS2), false);
});

test('a stopped server ends its runs with an error; a new server forgets run state but keeps plans', () => {
  const folders = new Folders();
  folders.updatePlan({ workspace: WS, items: [{ id: 1, text: 'a', status: 'in_progress' }] });
  folders.ensure(WS).status = { workspace: WS, state: 'waiting', runId: 'r1' };
  folders.ensure(WS2).status = { workspace: WS2, state: 'idle', reason: 'end_turn' };
  folders.serverStopped();
  assert.deepEqual(folders.get(WS)?.status, { workspace: WS, session: 'main', state: 'idle', reason: 'error', message: 'the server stopped' });
  assert.equal(folders.get(WS2)?.status?.reason, 'end_turn');
  assert.equal(folders.anyBusy(), false);
  folders.ensure(WS).usage = { workspace: WS };
  folders.serverStarted();
  assert.equal(folders.get(WS)?.status, undefined);
  assert.equal(folders.get(WS)?.usage, undefined);
  assert.equal(folders.plan(WS)?.items.length, 1);
  assert.ok(folders.hasPlanItems());
});

test('folders that leave the window are forgotten', () => {
  const folders = new Folders();
  folders.updatePlan({ workspace: WS, items: [] });
  folders.updatePlan({ workspace: WS2, items: [] });
  folders.retain(new Set([WS2]));
  assert.deepEqual(folders.all().map((f) => f.uri), [WS2]);
});

test('busy means running or waiting', () => {
  assert.ok(isBusy({ workspace: WS, state: 'running' }));
  assert.ok(isBusy({ workspace: WS, state: 'waiting' }));
  assert.equal(isBusy({ workspace: WS, state: 'idle' }), false);
  assert.equal(isBusy(undefined), false);
});
