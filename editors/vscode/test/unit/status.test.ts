import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { backgroundText, cacheShare, compactedLine, contextPercent, formatTokens, isSetupError, statusBarModel, totalTokens, usageText } from '../../src/model/status';
import { TranscriptWriter, planChangeLine, reminderLine, runEndLine, runStartLine, shortOutput, toolCallLines, usageLine } from '../../src/model/transcript';
import { BackgroundTasks, tasksOf } from '../../src/model/background';
import type { PlanParams } from '../../src/model/plan';

const WS = 'file:///work/demo';
const plan: PlanParams = {
  workspace: WS,
  items: [
    { id: 1, text: 'a', status: 'completed' },
    { id: 2, text: 'b', status: 'in_progress', activeForm: 'Doing b' },
  ],
  completed: 1,
  total: 2,
};

test('status bar: running shows progress and cancels on click', () => {
  const m = statusBarModel({ workspace: WS, state: 'running', runId: 'r1' }, plan, { workspace: WS, runInputTokens: 1500, runOutputTokens: 20 });
  assert.equal(m.text, '$(sync~spin) stepwise: running 1/2 · 1.5k tok');
  assert.equal(m.command, 'stepwise.cancelRun');
  assert.equal(m.busy, true);
  assert.match(m.tooltip, /Click to cancel/);
  assert.match(m.tooltip, /Plan: 1\/2 · Doing b/);
  assert.match(m.tooltip, /1\.5k in \/ 20 out/);
});

test('status bar: idle states', () => {
  assert.equal(statusBarModel(undefined, undefined).text, '$(checklist) stepwise: idle');
  const cancelled = statusBarModel({ workspace: WS, state: 'idle', reason: 'cancelled' }, plan);
  assert.equal(cancelled.text, '$(circle-slash) stepwise: cancelled 1/2');
  assert.equal(cancelled.command, 'stepwise.showPlan');
  assert.equal(cancelled.busy, false);
  const err = statusBarModel({ workspace: WS, state: 'idle', reason: 'error', message: 'MODEL_ID is not set' }, undefined);
  assert.equal(err.text, '$(error) stepwise: error');
  assert.equal(err.severity, 'error');
  assert.match(err.tooltip, /MODEL_ID is not set/);
  assert.equal(statusBarModel({ workspace: WS, state: 'idle', reason: 'end_turn' }, plan).text, '$(checklist) stepwise: idle 1/2');
  assert.equal(statusBarModel({ workspace: WS, state: 'waiting' }, plan, undefined, 'demo').text, '$(bell) stepwise: waiting 1/2');
  assert.match(statusBarModel({ workspace: WS, state: 'waiting' }, plan, undefined, 'demo').tooltip, /\(demo\)/);
});

test('token formatting', () => {
  assert.equal(totalTokens({ workspace: WS, runInputTokens: 100, runOutputTokens: 20 }), 120);
  assert.equal(totalTokens(undefined), undefined);
  assert.equal(formatTokens(999), '999');
  assert.equal(formatTokens(1234), '1.2k');
  assert.equal(formatTokens(45678), '46k');
  assert.equal(formatTokens(2_500_000), '2.5M');
  assert.equal(formatTokens(undefined), '0');
  assert.equal(usageText(undefined), undefined);
  assert.equal(usageText({ workspace: WS, inputTokens: 10, outputTokens: 2 }), '10 in / 2 out');
});

test('transcript lines: tool calls with short output, reminders, usage, run start/end', () => {
  assert.deepEqual(toolCallLines({ workspace: WS, name: 'bash', phase: 'started', summary: 'npm test' }), ['▶ bash npm test']);
  assert.deepEqual(toolCallLines({ workspace: WS, name: 'bash', phase: 'finished', output: 'ok\n' }), ['  ✓ bash', '    ok']);
  assert.deepEqual(toolCallLines({ workspace: WS, name: 'edit_file', phase: 'finished', output: 'Error: Text not found in a.js', isError: true }), [
    '  ✗ edit_file failed',
    '    Error: Text not found in a.js',
  ]);
  const long = Array.from({ length: 12 }, (_, i) => `l${i}`).join('\n');
  const out = shortOutput(long);
  assert.equal(out.length, 9);
  assert.equal(out[8], '    … (4 more lines)');
  assert.equal(reminderLine('<reminder>Update your todos.</reminder>'), '⚑ reminder: <reminder>Update your todos.</reminder>');
  assert.equal(usageLine({ workspace: WS, inputTokens: 100, outputTokens: 20, runInputTokens: 300, runOutputTokens: 40 }), '· tokens: 100 in / 20 out (run: 300 in / 40 out)');
  assert.equal(runStartLine('fix it', 'demo', 'r1'), '━━ stepwise run in demo [r1]: fix it');
  assert.equal(
    runEndLine('end_turn', undefined, { workspace: WS, runInputTokens: 300, runOutputTokens: 40 }, plan),
    '━━ run ended: end_turn · plan 1/2 · Doing b · tokens 300 in / 40 out',
  );
});

test('a change of the plan is said as what it was: an edit, an approval, a rewind; nothing for the model or a reset', () => {
  const by = (change: string | undefined, who = 'user') => planChangeLine({ ...plan, by: who, change });
  assert.equal(by('edit'), '✎ you changed the plan: 1/2 · Doing b');
  assert.equal(by('approved'), '✓ you approved the plan: 1/2 · Doing b');
  assert.equal(by('rewind'), '↶ the plan went back with the rewind: 1/2 · Doing b');
  assert.equal(by('reset'), undefined);
  assert.equal(by('update', 'model'), undefined);
  assert.equal(by(undefined, 'model'), undefined, 'a restored plan');
  // A server before `change` said only who: its user changes were edits.
  assert.equal(by(undefined), '✎ you changed the plan: 1/2 · Doing b');
});

test('streamed text is followed by structured lines on a fresh line', () => {
  let out = '';
  const w = new TranscriptWriter({ append: (s) => (out += s) });
  w.text('Hello');
  w.text(' world');
  w.line('▶ bash ls');
  w.text('done\n');
  w.line('x');
  assert.equal(out, 'Hello world\n▶ bash ls\ndone\nx\n');
});

test('status bar: context use, cache share and compactions', () => {
  const usage = {
    workspace: WS,
    inputTokens: 24_000,
    outputTokens: 10,
    runInputTokens: 24_000,
    runOutputTokens: 10,
    cacheReadTokens: 20_400,
    cacheWriteTokens: 0,
    contextTokens: 24_000,
    contextWindow: 200_000,
  };
  const m = statusBarModel({ workspace: WS, state: 'running' }, plan, usage);
  assert.equal(m.text, '$(sync~spin) stepwise: running 1/2 · 24k tok · ctx 12%');
  assert.match(m.tooltip, /Context: 24k of 200k tokens \(12%\) · 85% of the prompt from the cache/);
  const compacted = { workspace: WS, runId: 'r', tokensBefore: 150_000, tokensAfter: 20_000 };
  const after = statusBarModel({ workspace: WS, state: 'idle', reason: 'end_turn' }, plan, usage, undefined, compacted);
  assert.match(after.tooltip, /Compacted the conversation: 150k → 20k tokens; the plan is kept/);
  assert.equal(compactedLine({ ...compacted, summaryError: 'the summary request failed' }),
    'Compacted the conversation: 150k → 20k tokens; the plan is kept (no summary: the summary request failed)');
  // Servers that report no window: no context figure.
  assert.equal(contextPercent({ workspace: WS, contextTokens: 5 }), undefined);
  assert.equal(cacheShare({ workspace: WS, inputTokens: 100 }), undefined);
  const limit = statusBarModel({ workspace: WS, state: 'idle', reason: 'max_tokens' }, undefined);
  assert.equal(limit.severity, 'warning');
  assert.match(limit.tooltip, /stopped: output limit/);
});

test('a setup error is what the server says it is; older servers are judged by the text', () => {
  assert.equal(isSetupError({ errorKind: 'setup', message: 'anything' }), true);
  assert.equal(isSetupError({ errorKind: 'model', message: 'HTTP 401 from the model' }), false);
  assert.equal(isSetupError({ errorKind: 'internal' }), false);
  assert.equal(isSetupError({ message: 'no model is configured' }), true);
  assert.equal(isSetupError({ message: 'the stream broke' }), false);
});

test('status bar: counts the running background tasks, live from stepwise/background, also between runs', () => {
  const tasks = new BackgroundTasks();
  const task = (id: string, running: boolean) => ({ id, command: `serve ${id}`, state: running ? 'running' : 'exited 0', running, tail: '' });
  const idle = { workspace: WS, state: 'idle', reason: 'end_turn', backgroundTasks: 2 };
  tasks.update(tasksOf({ workspace: WS, tasks: [task('bg-1', true), task('bg-2', true)] }));
  const running = statusBarModel({ workspace: WS, state: 'running', runId: 'r1' }, plan, undefined, 'demo', undefined, undefined, tasks.running());
  assert.equal(running.text, '$(sync~spin) stepwise: running 1/2 · 2 background tasks');
  assert.match(running.tooltip, /^2 background tasks running \(demo\)/m);
  assert.equal(statusBarModel(idle, undefined, undefined, undefined, undefined, undefined, tasks.running()).text, '$(checklist) stepwise: idle · 2 background tasks');
  // bg-2 ends after the run: no new status, the list alone brings the count down (the status's stale 2 is not used).
  tasks.update(tasksOf({ workspace: WS, tasks: [task('bg-1', true), task('bg-2', false)] }));
  const one = statusBarModel(idle, undefined, undefined, undefined, undefined, undefined, tasks.running());
  assert.equal(one.text, '$(checklist) stepwise: idle · 1 background task');
  assert.match(one.tooltip, /^1 background task running/m);
  tasks.update(tasksOf({ workspace: WS, tasks: [task('bg-1', false), task('bg-2', false)] }));
  const none = statusBarModel(idle, undefined, undefined, undefined, undefined, undefined, tasks.running());
  assert.equal(none.text, '$(checklist) stepwise: idle');
  assert.doesNotMatch(none.tooltip, /background/);
  // The server stopped: its tasks ended with it.
  tasks.update(tasksOf({ workspace: WS, tasks: [task('bg-3', true)] }));
  tasks.serverStopped();
  assert.equal(backgroundText(tasks.running()), undefined);
  assert.equal(backgroundText(3), '3 background tasks');
});
