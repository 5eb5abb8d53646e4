import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  chooseFolder,
  executeCommandParams,
  folderForUri,
  mapLensCommand,
  runArguments,
  validateApiKey,
  validatePrompt,
  workspaceArguments,
} from '../../src/model/commands';

const A = { uri: 'file:///work/a', name: 'a' };
const AB = { uri: 'file:///work/a/b', name: 'b' };
const C = { uri: 'file:///work/c', name: 'c' };

test('stepwise.run arguments: trimmed prompt and the folder URI', () => {
  assert.deepEqual(runArguments('  fix the bug \n', A.uri), [{ prompt: 'fix the bug', workspace: 'file:///work/a' }]);
  assert.deepEqual(runArguments('x', undefined), [{ prompt: 'x' }]);
  assert.equal(runArguments('   ', A.uri), undefined);
  assert.equal(runArguments(undefined, A.uri), undefined);
  assert.deepEqual(executeCommandParams('stepwise.run', runArguments('x', A.uri)!), {
    command: 'stepwise.run',
    arguments: [{ prompt: 'x', workspace: 'file:///work/a' }],
  });
});

test('cancel/reset/plan arguments', () => {
  assert.deepEqual(workspaceArguments(C.uri), [{ workspace: 'file:///work/c' }]);
  assert.deepEqual(workspaceArguments(undefined), [{}]);
});

test('the folder of the active editor, innermost first, no prefix confusion', () => {
  const folders = [A, AB, C];
  assert.equal(folderForUri(folders, 'file:///work/a/b/x.ts'), AB);
  assert.equal(folderForUri(folders, 'file:///work/a/x.ts'), A);
  assert.equal(folderForUri(folders, 'file:///work/abc/x.ts'), undefined);
  assert.equal(folderForUri(folders, undefined), undefined);
});

test('choose folder: active editor, only folder, or ask', () => {
  assert.deepEqual(chooseFolder([A, C], 'file:///work/c/main.rs'), { kind: 'folder', folder: C });
  assert.deepEqual(chooseFolder([A], undefined), { kind: 'folder', folder: A });
  assert.deepEqual(chooseFolder([A], 'untitled:Untitled-1'), { kind: 'folder', folder: A });
  assert.deepEqual(chooseFolder([A, C], undefined), { kind: 'ask', candidates: [A, C] });
  assert.deepEqual(chooseFolder([A, C], 'file:///elsewhere/x'), { kind: 'ask', candidates: [A, C] });
  assert.deepEqual(chooseFolder([], undefined), { kind: 'none' });
  // Cancel: only the busy folders are candidates.
  assert.deepEqual(chooseFolder([A, C], 'file:///work/a/x', [C]), { kind: 'folder', folder: C });
  assert.deepEqual(chooseFolder([A, C], 'file:///work/a/x', [A, C]), { kind: 'folder', folder: A });
});

test('input validation', () => {
  assert.equal(validatePrompt('  '), 'Describe the task for the agent');
  assert.equal(validatePrompt('do it'), undefined);
  assert.equal(validateApiKey(''), undefined);
  assert.equal(validateApiKey('sk-abc'), undefined);
  assert.equal(validateApiKey('sk abc'), 'An API key has no spaces');
});

test('the lens command stepwise.plan opens the plan view', () => {
  assert.equal(mapLensCommand('stepwise.plan'), 'stepwise.showPlan');
  assert.equal(mapLensCommand('other.cmd'), 'other.cmd');
});
