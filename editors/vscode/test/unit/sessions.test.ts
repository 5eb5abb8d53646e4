// Sessions side by side: each notification updates the record of the session it names, the views show the
// session in view, commands go to it, and the selector, the status bar, the questions and apply/discard read the
// server's list with what the notifications said since.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { withSession } from '../../src/model/commands';
import { Folders } from '../../src/model/folders';
import { appliedMessage, askPlace, discardQuestion, progressOf, runningSummary, sessionOf, sessionsOf, sessionTabs } from '../../src/model/sessions';

const WS = 'file:///w/demo';
const WS2 = 'file:///w/other';
const item = (text: string, status: string) => ({ id: text, text, status });

test('notifications of two sessions at once each go to their session; the views read the session in view', () => {
  const folders = new Folders();
  // What events.ts does with each notification: the record of `sessionOf(params)`.
  const plan = (session: string | undefined, items: ReturnType<typeof item>[]) => folders.updatePlan({ workspace: WS, ...(session ? { session } : {}), items });
  const status = (session: string | undefined, state: string, runId: string) => {
    const p = { workspace: WS, ...(session ? { session } : {}), state, runId };
    folders.ensure(WS, sessionOf(p)).status = p;
  };
  plan('main', [item('B1', 'in_progress'), item('B2', 'pending')]);
  status('main', 'running', 'r-main');
  plan('s2', [item('A1', 'in_progress')]);
  status('s2', 'waiting', 'r-s2');
  // A server before sessions names none: the folder's own.
  plan(undefined, [item('B1', 'completed'), item('B2', 'in_progress')]);

  assert.equal(folders.viewed(WS), 'main');
  assert.deepEqual(folders.plan(WS)?.items.map((i) => i.text), ['B1', 'B2']);
  assert.equal(folders.plan(WS)?.items[0].status, 'completed', 'the one without a session updated the folder\'s own');
  assert.deepEqual(folders.get(WS, 's2')?.plan?.items.map((i) => i.text), ['A1']);
  assert.equal(folders.get(WS, 's2')?.plan?.session, 's2');
  assert.deepEqual(folders.running().map((f) => `${f.session}:${f.status?.state}`), ['main:running', 's2:waiting']);

  // Another session in view: the plan view, Cancel and the status read it; the other's record stays.
  assert.ok(folders.setViewed(WS, 's2'));
  assert.equal(folders.setViewed(WS, 's2'), false, 'already in view');
  assert.deepEqual(folders.plan(WS)?.items.map((i) => i.text), ['A1']);
  assert.equal(folders.get(WS)?.status?.runId, 'r-s2');
  assert.deepEqual(folders.roots([{ uri: WS, name: 'demo' }]).map((n) => n.label), ['A1']);
  status('s2', 'idle', 'r-s2');
  assert.equal(folders.busy(WS), false, 'the session in view is idle');
  assert.ok(folders.busy(WS, 'main'), 'the folder\'s own still runs');
  assert.equal(folders.anyBusy(), false, 'no session in view runs: the plan view offers no Cancel');
  assert.equal(folders.firstBusy(), WS);

  // The server stops: every session's run ends.
  folders.serverStopped();
  assert.equal(folders.running().length, 0);
  assert.equal(folders.get(WS, 'main')?.status?.message, 'the server stopped');
});

test('the server\'s list: titles, a session gone leaves the view and its record', () => {
  const folders = new Folders();
  folders.ensure(WS, 's2').prompt = 'alpha';
  folders.setViewed(WS, 's2');
  assert.equal(folders.setList(WS, sessionsOf({ sessions: [{ session: 'main', title: 'Main', state: 'idle' }, { session: 's2', title: 'Session 2', state: 'running' }] })), false);
  assert.equal(folders.sessionTitle(WS, 's2'), 'Session 2');
  assert.equal(folders.sessionTitle(WS, 'main'), 'Main');
  assert.equal(folders.sessionTitle(WS2, 'main'), 'Main', 'a folder never listed: its own is Main');
  // Discarded: the list no longer has it.
  assert.equal(folders.setList(WS, sessionsOf({ sessions: [{ session: 'main', title: 'Main', state: 'idle' }] })), true);
  assert.equal(folders.viewed(WS), 'main');
  assert.equal(folders.get(WS, 's2'), undefined);
});

test('a list from the server is checked: no id, twice the same id, odd counts are dropped', () => {
  const list = sessionsOf({
    sessions: [
      { session: 'main', title: 'Main', state: 'idle' },
      { title: 'no id' },
      { session: 's1', state: 'idle', worktree: '/tmp/wt', branch: 'stepwise/s1', unapplied: 2, progress: '1/3' },
      { session: 's1', title: 'again' },
      { session: 's2', title: 'Odd', unapplied: -1 },
      'nonsense',
    ],
  });
  assert.deepEqual(list, [
    { session: 'main', title: 'Main', state: 'idle' },
    { session: 's1', title: 's1', state: 'idle', worktree: '/tmp/wt', branch: 'stepwise/s1', unapplied: 2, progress: '1/3' },
    { session: 's2', title: 'Odd', state: 'idle' },
  ]);
  assert.deepEqual(sessionsOf(null), []);
  assert.deepEqual(sessionsOf({ sessions: 'x' }), []);
  assert.equal(sessionOf({ session: 's1' }), 's1');
  assert.equal(sessionOf({}), 'main');
  assert.equal(sessionOf(undefined), 'main');
});

test('the selector: the list with each session\'s latest state and progress, a question badged unless in view', () => {
  const list = sessionsOf({
    sessions: [
      { session: 'main', title: 'Main', state: 'idle', progress: '0/2' },
      { session: 's1', title: 'Session 2', state: 'idle', worktree: '/wt', branch: 'stepwise/s1', unapplied: 1 },
      { session: 's3', title: 'Old', state: 'closed' },
    ],
  });
  const live = new Map([
    ['main', { status: { workspace: WS, state: 'running' }, plan: { workspace: WS, items: [item('a', 'completed'), item('b', 'in_progress')] } }],
    ['s1', { status: { workspace: WS, state: 'waiting' } }],
    ['s3', { status: { workspace: WS, state: 'idle' } }],
  ]);
  const tabs = sessionTabs(list, (s) => live.get(s), 's1', new Set(['main', 's1']), ['s9']);
  assert.deepEqual(
    tabs.map((t) => [t.session, t.title, t.state, t.progress, t.asks, t.viewed, t.unapplied]),
    [
      ['main', 'Main', 'running', '1/2', true, false, undefined],
      ['s1', 'Session 2', 'waiting', undefined, false, true, 1],
      ['s3', 'Old', 'closed', undefined, false, false, undefined],
      // Just made: not listed yet.
      ['s9', 's9', 'idle', undefined, false, false, undefined],
    ],
  );
  assert.equal(tabs[1].branch, 'stepwise/s1');
  // Before any list: the folder's own alone.
  assert.deepEqual(sessionTabs([], () => undefined, 'main', new Set()).map((t) => t.session), ['main']);
  assert.equal(progressOf({ workspace: WS, items: [] }), undefined);
});

test('a question goes to its card, to its session\'s card with a notification, or to VS Code\'s notification', () => {
  const view = { visible: true, folder: WS, viewed: 's1' };
  assert.equal(askPlace({ workspace: WS, session: 's1' }, view), 'card');
  assert.equal(askPlace({ workspace: WS, session: 'main' }, view), 'other');
  assert.equal(askPlace({ workspace: WS }, { ...view, viewed: 'main' }), 'card', 'no session: the folder\'s own');
  assert.equal(askPlace({ workspace: WS2, session: 's1' }, view), 'window', 'another folder');
  assert.equal(askPlace({ workspace: WS, session: 's1' }, { ...view, visible: false }), 'window', 'the view is closed');
});

test('commands about a conversation go to the session in view unless they name one', () => {
  const viewed = (ws: string) => (ws === WS ? 's2' : 'main');
  assert.deepEqual(withSession('stepwise.run', [{ workspace: WS, prompt: 'p' }], viewed), [{ workspace: WS, prompt: 'p', session: 's2' }]);
  assert.deepEqual(withSession('stepwise.changes', [{ workspace: WS2 }], viewed), [{ workspace: WS2, session: 'main' }]);
  assert.deepEqual(withSession('stepwise.cancel', [{ workspace: WS, session: 'main' }], viewed), [{ workspace: WS, session: 'main' }], 'named: kept');
  assert.deepEqual(withSession('stepwise.plan', [{}], viewed), [{}], 'no folder: the server\'s default');
  for (const command of ['stepwise.newSession', 'stepwise.sessions', 'stepwise.applySession', 'stepwise.closeSession'])
    assert.deepEqual(withSession(command, [{ workspace: WS }], viewed), [{ workspace: WS }], command);
});

test('the status bar counts the sessions running, those waiting for an answer said', () => {
  assert.equal(runningSummary([{ label: 'Main', state: 'running' }]), undefined, 'one: its own state shows');
  const s = runningSummary([
    { label: 'Main', state: 'waiting', progress: '0/2' },
    { label: 'Session 2', state: 'running', progress: '1/1' },
  ]);
  assert.equal(s?.text, '$(sync~spin) stepwise: 2 running (1 waiting for you)');
  assert.match(s?.tooltip ?? '', /Main: waiting for your answer 0\/2\nSession 2: running 1\/1/);
  assert.equal(runningSummary([{ label: 'a', state: 'running' }, { label: 'b', state: 'running' }])?.text, '$(sync~spin) stepwise: 2 running');
});

test('apply says what came in and what was left alone; discard asks only when a worktree holds unapplied files', () => {
  assert.deepEqual(appliedMessage({ applied: ['greet.js'], conflicts: [] }, 'Session 3', 'demo'), {
    text: 'stepwise: applied greet.js of Session 3 to demo; review them in the Changes view.',
    warning: false,
  });
  const both = appliedMessage({ applied: ['a.js', 'b.js'], conflicts: ['README.md'] }, 'Session 3', 'demo');
  assert.equal(both.warning, true);
  assert.equal(both.text, 'stepwise: applied 2 files of Session 3 to demo; left alone, changed in demo since the session began: README.md');
  assert.equal(appliedMessage({ applied: [], conflicts: [] }, 'S', 'demo').text, 'stepwise: S has no changes to apply.');
  assert.equal(appliedMessage(null, 'S', 'demo').warning, false);
  assert.equal(discardQuestion({ session: 's', title: 'S', state: 'idle', unapplied: 0 }, 'S'), undefined);
  assert.equal(discardQuestion(undefined, 'S'), undefined);
  const q = discardQuestion({ session: 's', title: 'S', state: 'idle', worktree: '/wt', unapplied: 2 }, 'S');
  assert.equal(q?.message, 'Discard S?');
  assert.match(q?.detail ?? '', /2 changed files not applied/);
});
