import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  apiKeyEnvName,
  effectiveProvider,
  initializationOptions,
  missingBinaryMessage,
  missingConfiguration,
  missingConfigurationMessage,
  needsRestart,
  parseDotenv,
  resolveServerCommand,
  secretKeyName,
  serverEnv,
} from '../../src/settings';

test('settings become initializationOptions; unset and extension-only keys are left out', () => {
  const opts = initializationOptions({
    provider: 'anthropic',
    model: 'claude-x',
    baseUrl: 'http://127.0.0.1:9999',
    approval: 'auto',
    reminderRounds: 3,
    maxRounds: 50,
    planningStyle: 'todo',
    serverPath: '/x/stepwise',
    apiKey: 'sk-never-sent',
  });
  assert.deepEqual(opts, {
    provider: 'anthropic',
    model: 'claude-x',
    baseUrl: 'http://127.0.0.1:9999',
    approval: 'auto',
    reminderRounds: 3,
    maxRounds: 50,
    planningStyle: 'todo',
  });
});

test('empty strings and nulls fall back to the environment (left out)', () => {
  assert.deepEqual(initializationOptions({ provider: '', model: '  ', baseUrl: null, approval: 'ask' }), { approval: 'ask' });
  assert.deepEqual(initializationOptions(undefined), {});
});

test('invalid values are dropped, enums lowercased', () => {
  assert.deepEqual(
    initializationOptions({ provider: 'OpenAI', approval: 'sometimes', maxRounds: 0, reminderRounds: 2.5, planningStyle: 'tasks' }),
    { provider: 'openai', planningStyle: 'tasks' },
  );
  assert.deepEqual(initializationOptions({ maxRounds: '7' }), { maxRounds: 7 });
});

test('provider: setting, else STEPWISE_PROVIDER, else anthropic; key variable per provider', () => {
  assert.equal(effectiveProvider('openai', {}), 'openai');
  assert.equal(effectiveProvider('', { STEPWISE_PROVIDER: 'openai' }), 'openai');
  assert.equal(effectiveProvider(undefined, {}), 'anthropic');
  assert.equal(apiKeyEnvName('anthropic'), 'ANTHROPIC_API_KEY');
  assert.equal(apiKeyEnvName('openai'), 'OPENAI_API_KEY');
  assert.equal(secretKeyName('openai'), 'stepwise.apiKey.openai');
});

test('the secret goes into the server environment under the provider variable', () => {
  const base = { PATH: '/bin', ANTHROPIC_API_KEY: 'from-env' };
  assert.equal(serverEnv(base, 'anthropic', 'from-secret').ANTHROPIC_API_KEY, 'from-secret');
  assert.equal(serverEnv(base, 'anthropic', undefined).ANTHROPIC_API_KEY, 'from-env');
  const o = serverEnv(base, 'openai', 'sk-o');
  assert.equal(o.OPENAI_API_KEY, 'sk-o');
  assert.equal(o.ANTHROPIC_API_KEY, 'from-env');
  assert.equal(base.ANTHROPIC_API_KEY, 'from-env', 'base env untouched');
});

test('server binary: serverPath, PATH, ~/.cargo/bin; missing gives the install hint', () => {
  const files = new Set(['/opt/bin/stepwise', '/home/u/.cargo/bin/stepwise', '/ws/target/debug/stepwise']);
  const exists = (p: string) => files.has(p);
  const env = { PATH: '/usr/bin:/opt/bin', HOME: '/home/u' };
  assert.deepEqual(resolveServerCommand('', env, exists, { platform: 'linux' }), { command: '/opt/bin/stepwise', found: true, where: '/opt/bin/stepwise' });
  assert.equal(resolveServerCommand('', { PATH: '/usr/bin', HOME: '/home/u' }, exists, { platform: 'linux' }).command, '/home/u/.cargo/bin/stepwise');
  assert.equal(resolveServerCommand('~/.cargo/bin/stepwise', env, exists).found, true);
  assert.deepEqual(resolveServerCommand('target/debug/stepwise', env, exists, { baseDir: '/ws' }), {
    command: '/ws/target/debug/stepwise',
    found: true,
    where: '/ws/target/debug/stepwise',
  });
  const missing = resolveServerCommand('/nope/stepwise', env, exists);
  assert.equal(missing.found, false);
  assert.equal(
    missingBinaryMessage(missing.where),
    'stepwise: server binary not found at /nope/stepwise. Install it with `cargo install --path server` or set stepwise.serverPath.',
  );
  assert.equal(resolveServerCommand('', { PATH: '/usr/bin' }, () => false, { home: '', platform: 'linux' }).found, false);
});

test('missing model / key are reported with a fix', () => {
  const none = missingConfiguration({ settings: {}, env: {}, dotenv: [] });
  assert.deepEqual(none, ['model', 'apiKey']);
  const msg = missingConfigurationMessage(none, 'anthropic');
  assert.match(msg, /stepwise\.model/);
  assert.match(msg, /Set API Key/);
  assert.match(msg, /ANTHROPIC_API_KEY/);
  assert.deepEqual(missingConfiguration({ settings: { model: 'm' }, env: {}, dotenv: [], secret: 'k' }), []);
  assert.deepEqual(missingConfiguration({ settings: {}, env: { MODEL_ID: 'm', ANTHROPIC_API_KEY: 'k' }, dotenv: [] }), []);
  assert.deepEqual(missingConfiguration({ settings: {}, env: {}, dotenv: [{ MODEL_ID: 'm', ANTHROPIC_API_KEY: 'k' }] }), []);
  // OpenAI-compatible servers may need no key.
  assert.deepEqual(missingConfiguration({ settings: { provider: 'openai', model: 'llama' }, env: {}, dotenv: [] }), []);
});

test('.env parsing', () => {
  assert.deepEqual(parseDotenv('# c\nMODEL_ID=claude\nexport A="x y"\nB=\'q\'\nC=v # comment\nbad line\n'), {
    MODEL_ID: 'claude',
    A: 'x y',
    B: 'q',
    C: 'v',
  });
});

test('serverPath and provider changes restart the server', () => {
  assert.equal(needsRestart((k) => k === 'stepwise.serverPath'), true);
  assert.equal(needsRestart((k) => k === 'stepwise.provider'), true);
  assert.equal(needsRestart((k) => k === 'stepwise.model'), false);
});
