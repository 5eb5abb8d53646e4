import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  apiKeyEnvName,
  bundledServerPath,
  doctorArgs,
  doctorProblemMessage,
  doctorReportLines,
  sandboxLine,
  effectiveProvider,
  initializationOptions,
  missingBinaryMessage,
  missingConfigurationMessage,
  needsRestart,
  parseDoctorReport,
  resolveServerCommand,
  secretKeyName,
  serverEnv,
  sessionFile,
  stateDir,
  type DoctorReport,
} from '../../src/setup/settings';

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

/** A report as `stepwise doctor --json` prints it (tests/tests/cli_doctor.rs checks the server's side). */
const REPORT: DoctorReport = {
  version: '0.1.0',
  workspace: '/ws',
  envFiles: ['/ws/.env'],
  provider: { value: 'anthropic', variable: 'STEPWISE_PROVIDER', source: 'default' },
  model: { value: null, variable: 'MODEL_ID', source: 'unset' },
  baseUrl: { value: 'http://127.0.0.1:9', variable: 'ANTHROPIC_BASE_URL', source: 'file', file: '/ws/.env' },
  apiKey: { variable: 'ANTHROPIC_API_KEY', set: false, source: 'unset' },
  stateDir: '/state',
  session: null,
  missing: ['model', 'apiKey'],
  problems: ['no model configured: set MODEL_ID (in the environment or a .env file)', 'no API key: set ANTHROPIC_API_KEY (in the environment or a .env file)'],
  ok: false,
};

test('doctor: its arguments carry the settings the server gets; its report is read and shown', () => {
  const args = doctorArgs('/ws', { model: 'm', serverPath: '/x', approval: 'nope' });
  assert.deepEqual(args.slice(0, 4), ['doctor', '--json', '--workspace', '/ws']);
  assert.deepEqual(JSON.parse(args[5]), { model: 'm' });
  // The editor's own language servers answer the agent: doctor starts none of stepwise's.
  assert.equal(args[6], '--no-language-servers');
  assert.equal(parseDoctorReport('not json'), undefined);
  assert.equal(parseDoctorReport('{"version":"1"}'), undefined);
  assert.deepEqual(parseDoctorReport(JSON.stringify(REPORT) + '\n'), REPORT);
  const lines = doctorReportLines(REPORT).join('\n');
  assert.match(lines, /model +missing: set MODEL_ID/);
  assert.match(lines, /base URL +http:\/\/127\.0\.0\.1:9 \(\/ws\/\.env\)/);
  assert.match(lines, /API key +ANTHROPIC_API_KEY is not set/);
  assert.match(lines, /problem: no model configured/);
  const ready = { ...REPORT, model: { value: 'm', variable: 'MODEL_ID', source: 'settings' as const }, apiKey: { ...REPORT.apiKey, set: true, source: 'environment' as const }, missing: [], problems: [], ok: true };
  assert.match(doctorReportLines(ready).join('\n'), /model +m \(VS Code settings\)[^]*ANTHROPIC_API_KEY is set \(environment\)[^]*ready/);
});

test('doctor: the sandbox line says how commands run, or why they ask', () => {
  assert.equal(sandboxLine(REPORT), undefined);
  const on = { ...REPORT, sandbox: { mode: 'workspace-write' as const, network: 'off' as const, available: true, by: 'Landlock ABI 7' } };
  assert.equal(sandboxLine(on), 'workspace-write (Landlock ABI 7, network off)');
  assert.match(doctorReportLines(on).join('\n'), /sandbox +workspace-write \(Landlock ABI 7, network off\)/);
  const none = { ...REPORT, sandbox: { mode: 'workspace-write' as const, network: 'off' as const, available: false, reason: 'no Landlock' } };
  assert.equal(sandboxLine(none), 'unavailable: no Landlock; every shell command asks');
  assert.equal(sandboxLine({ ...REPORT, sandbox: { mode: 'off' as const, network: 'off' as const } }), 'off: every shell command asks');
  const args = doctorArgs('/ws', { sandbox: 'read-only', sandboxNetwork: 'on' });
  assert.deepEqual(JSON.parse(args[5]), { sandbox: 'read-only', sandboxNetwork: 'on' });
  assert.deepEqual(JSON.parse(doctorArgs('/ws', { sandbox: 'strict' })[5]), {});
});

test('doctor: what is missing becomes the VS Code fix; other problems are shown in the server words', () => {
  const msg = doctorProblemMessage(REPORT, 'anthropic')!;
  assert.equal(msg, missingConfigurationMessage(['model', 'apiKey'], 'anthropic'));
  assert.match(msg, /stepwise\.model/);
  assert.match(msg, /Set API Key/);
  assert.match(msg, /ANTHROPIC_API_KEY/);
  const foreign = { ...REPORT, missing: [], problems: ['ANTHROPIC_BASE_URL in /ws/.env points the API key elsewhere'], ok: false };
  assert.equal(doctorProblemMessage(foreign, 'anthropic'), 'stepwise: ANTHROPIC_BASE_URL in /ws/.env points the API key elsewhere');
  assert.equal(doctorProblemMessage({ ...REPORT, missing: [], problems: [], ok: true }, 'anthropic'), undefined);
});

test('the server: serverPath, then the one packaged in the extension, then PATH', () => {
  const bundled = bundledServerPath('/ext', 'linux');
  assert.equal(bundled, '/ext/server/stepwise');
  assert.equal(bundledServerPath('/ext', 'win32').endsWith('stepwise.exe'), true);
  const files = new Set([bundled, '/opt/bin/stepwise', '/set/stepwise']);
  const exists = (p: string) => files.has(p);
  const env = { PATH: '/opt/bin', HOME: '/home/u' };
  assert.equal(resolveServerCommand('/set/stepwise', env, exists, { bundled }).command, '/set/stepwise');
  assert.equal(resolveServerCommand('', env, exists, { bundled, platform: 'linux' }).command, bundled);
  files.delete(bundled);
  assert.equal(resolveServerCommand('', env, exists, { bundled, platform: 'linux' }).command, '/opt/bin/stepwise');
});

test('a saved session is found where the server keeps it (state.rs file_for, trust.rs state_dir)', () => {
  assert.equal(stateDir({ STEPWISE_STATE_DIR: '/s', XDG_STATE_HOME: '/x', HOME: '/h' }), '/s');
  assert.equal(stateDir({ XDG_STATE_HOME: '/x', HOME: '/h' }), '/x/stepwise/sessions');
  assert.equal(stateDir({ HOME: '/h' }), '/h/.local/state/stepwise/sessions');
  assert.equal(stateDir({ STEPWISE_STATE_DIR: '' }), undefined);
  // FNV-1a of the path's bytes, as the server computes it; the name keeps [A-Za-z0-9_-].
  assert.equal(sessionFile('/s', '/home/u/my proj.v2'), '/s/my_proj_v2-4a52ef7a38f58f5b.json');
  assert.equal(sessionFile('/s', '/w/' + 'x'.repeat(50)).split('/')[2].split('-')[0].length, 40);
});

test('serverPath and provider changes restart the server', () => {
  assert.equal(needsRestart((k) => k === 'stepwise.serverPath'), true);
  assert.equal(needsRestart((k) => k === 'stepwise.provider'), true);
  assert.equal(needsRestart((k) => k === 'stepwise.model'), false);
});

test('mcpServers is passed whole; an empty or non-object one is left out', () => {
  const servers = { fs: { command: 'npx', args: ['-y', 'server-filesystem', '.'] }, docs: { type: 'http', url: 'http://127.0.0.1:1/mcp' } };
  assert.deepEqual(initializationOptions({ mcpServers: servers }), { mcpServers: servers });
  assert.deepEqual(initializationOptions({ mcpServers: {} }), {});
  assert.deepEqual(initializationOptions({ mcpServers: ['x'] }), {});
  assert.deepEqual(initializationOptions({ mcpServers: 'fs' }), {});
});

test('doctor: instruction files and MCP servers are listed', () => {
  const r: DoctorReport = {
    ...REPORT,
    instructions: [
      { path: '/home/u/.config/stepwise/AGENTS.md', scope: 'user', bytes: 40, used: 40, cut: false },
      { path: '/ws/AGENTS.md', scope: 'workspace', bytes: 40000, used: 32768, cut: true },
    ],
    mcpServers: [
      { name: 'repo', origin: 'workspace', transport: 'stdio', state: 'untrusted', command: 'srv', args: ['--x'] },
      { name: 'docs', origin: 'settings', transport: 'http', state: 'configured', url: 'http://127.0.0.1:1/mcp' },
    ],
    mcpProblems: ['/ws/.mcp.json: server \'bad\': a server needs a "command" (stdio) or a "url" (http)'],
  };
  const lines = doctorReportLines(r).join('\n');
  assert.match(lines, /instructions \/home\/u\/\.config\/stepwise\/AGENTS\.md \(40 bytes\)/);
  assert.match(lines, /instructions \/ws\/AGENTS\.md \(32768 of 40000 bytes: cut at 32 KiB\)/);
  assert.match(lines, /MCP server repo \(stdio, workspace\): srv --x \[not trusted yet/);
  assert.match(lines, /MCP server docs \(http, settings\): http:\/\/127\.0\.0\.1:1\/mcp \[configured\]/);
  assert.match(lines, /MCP problem: \/ws\/\.mcp\.json: server 'bad'/);
});

test('sandboxWritable passes a list of folders, leaving out empty ones', () => {
  assert.deepEqual(initializationOptions({ sandboxWritable: ['/a', ' ', '/b '] }).sandboxWritable, ['/a', '/b']);
  assert.equal(initializationOptions({ sandboxWritable: [] }).sandboxWritable, undefined);
  assert.equal(initializationOptions({ sandboxWritable: '/a' }).sandboxWritable, undefined);
});
