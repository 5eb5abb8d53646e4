import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { changesTitle } from '../../src/model/changes';

test('the Changes view\'s title counts the files and says how many are left to review', () => {
  assert.equal(changesTitle([]), 'Changes');
  assert.equal(changesTitle([{ reviewed: false }]), 'Changes 1 file');
  assert.equal(changesTitle([{}, { reviewed: false }, {}]), 'Changes 3 files');
  assert.equal(changesTitle([{ reviewed: true }, {}, {}]), 'Changes 3 files, 2 to review');
  assert.equal(changesTitle([{ reviewed: true }, { reviewed: true }]), 'Changes 2 files, reviewed');
});
