// End-to-end test of the stepwise extension in real VS Code (code-server), driven with playwright-core in
// Debian's chromium, against the real `stepwise lsp` and the scripted mock model of the tests crate.
//
// Inputs (environment; test.sh sets them): MOCK_MODEL_BIN, CODE_SERVER_DIR, VSIX (the platform-specific
// package with the server inside: the test puts no `stepwise` on PATH and sets no serverPath), CHROMIUM,
// ARTIFACTS_DIR. Every wait has a timeout; on a failure the page's screenshot, the server log and the mock
// model's log are dumped (and kept in ARTIFACTS_DIR).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const EXT_ROOT = path.resolve(HERE, '../..');
const REPO = path.resolve(EXT_ROOT, '../..');
const env = process.env;
const MOCK_MODEL_BIN = env.MOCK_MODEL_BIN ?? path.join(REPO, 'target/debug/mock-model');
const CODE_SERVER_DIR = env.CODE_SERVER_DIR ?? path.join(os.homedir(), '.cache/stepwise-tools/code-server');
const CODE_SERVER = path.join(CODE_SERVER_DIR, 'node_modules/code-server/out/node/entry.js');
const VSIX = env.VSIX ?? path.join(EXT_ROOT, 'stepwise-linux-x64.vsix');
const CHROMIUM = env.CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = env.ARTIFACTS_DIR ?? path.join(EXT_ROOT, 'test-artifacts');
/** Set API Key through the UI (SecretStorage); with STEPWISE_E2E_KEY_VIA_ENV=1 the key comes from the environment. */
const KEY_VIA_ENV = env.STEPWISE_E2E_KEY_VIA_ENV === '1';

const LONG = 60_000;
const SHORT = 15_000;

const PROMPT_1 = 'Make the greeting friendlier';
const PROMPT_2 = 'Add a farewell';
const ORIGINAL = 'return `Hello, ${name}!`;';
const EDITED = 'return `Hello, ${name}, welcome to stepwise!`;';

/** The mock model's script: run 1 plans, edits (editor), runs a shell command (save), completes; run 2 hangs. */
const SCRIPT = [
  {
    type: 'turn',
    text: "I'll make a plan first.",
    tool_calls: [
      {
        name: 'todo',
        input: {
          items: [
            { id: '1', text: 'Read greet.js', status: 'in_progress', activeForm: 'Reading greet.js' },
            { id: '2', text: 'Make the greeting friendlier', status: 'pending' },
          ],
        },
      },
    ],
  },
  {
    type: 'turn',
    text: 'Now the edit.',
    tool_calls: [
      {
        name: 'todo',
        input: {
          items: [
            { id: '1', text: 'Read greet.js', status: 'completed' },
            { id: '2', text: 'Make the greeting friendlier', status: 'in_progress', activeForm: 'Making the greeting friendlier' },
          ],
        },
      },
      { name: 'edit_file', input: { path: 'greet.js', old_text: 'Hello, ${name}!', new_text: 'Hello, ${name}, welcome to stepwise!' } },
    ],
  },
  { type: 'turn', text: 'Checking the file on disk.', tool_calls: [{ name: 'bash', input: { command: 'grep -c welcome greet.js' } }] },
  {
    type: 'turn',
    tool_calls: [
      {
        name: 'todo',
        input: {
          items: [
            { id: '1', text: 'Read greet.js', status: 'completed' },
            { id: '2', text: 'Make the greeting friendlier', status: 'completed' },
          ],
        },
      },
    ],
  },
  { type: 'turn', text: 'The greeting is friendlier now.' },
  {
    type: 'turn',
    text: 'A new plan for the farewell.',
    tool_calls: [
      {
        name: 'todo',
        input: {
          items: [
            { id: '1', text: 'Look at greet.js', status: 'completed' },
            { id: '2', text: 'Add a farewell function', status: 'in_progress', activeForm: 'Adding a farewell function' },
            { id: '3', text: 'Export farewell', status: 'pending' },
          ],
        },
      },
    ],
  },
  { type: 'hang' },
  // Run 3 (approval "ask"): the shell command waits for the user's Allow.
  {
    type: 'turn',
    tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: 'Count the lines of greet.js', status: 'in_progress', activeForm: 'Counting lines' }] } }],
  },
  { type: 'turn', tool_calls: [{ name: 'bash', input: { command: 'wc -l < greet.js' } }] },
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: 'Count the lines of greet.js', status: 'completed' }] } }] },
  { type: 'turn', text: 'greet.js has 6 lines.' },
  // Run 4, in the second folder of a multi-root window.
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: 'Inspect demo2', status: 'completed' }] } }] },
  { type: 'turn', text: 'demo2 checked.' },
  // Run 5, cancelled from the status bar.
  {
    type: 'turn',
    tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: 'Wait for the model', status: 'in_progress', activeForm: 'Waiting' }] } }],
  },
  { type: 'hang' },
];

// ---- helpers --------------------------------------------------------------------------------------------

const procs = [];
let scratch;
let page;
let browser;
let userDataDir;
let mockLog = '';
let codeServerLog = '';
let consoleLog = '';
let stopped = false;

function log(...args) {
  console.log('[e2e]', ...args);
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function start(name, cmd, args, opts, onData) {
  const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  procs.push({ name, child });
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => onData(d, 'stdout'));
  child.stderr.on('data', (d) => onData(d, 'stderr'));
  child.on('exit', (code, signal) => {
    if (!stopped) log(`${name} exited (${code ?? signal})`);
  });
  return child;
}

/** Polls `probe` until `ok(value)`; throws with the last value after `timeout` ms. */
async function waitFor(desc, probe, ok, timeout = LONG) {
  const end = Date.now() + timeout;
  let last;
  let lastError;
  while (Date.now() < end) {
    try {
      last = await probe();
      lastError = undefined;
      if (ok(last)) return last;
    } catch (e) {
      lastError = e;
    }
    await sleep(250);
  }
  throw new Error(`timed out after ${timeout} ms waiting for ${desc}; last value: ${JSON.stringify(last)}${lastError ? `; last error: ${lastError.message}` : ''}`);
}

const norm = (s) => (s ?? '').replace(/\u00a0/g, ' ');

async function text(selector) {
  const all = await page.locator(selector).allTextContents();
  return norm(all.join('\n'));
}

async function statusBarText() {
  return text('.part.statusbar .statusbar-item');
}

async function waitStatus(re, timeout = LONG) {
  return waitFor(`status bar ${re}`, statusBarText, (t) => re.test(t), timeout);
}

async function editorText() {
  return text('.part.editor .monaco-editor .view-lines');
}

async function planRows() {
  return page.locator('.monaco-list-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('aria-label') ?? ''));
}

async function runCommand(title) {
  // Open the command palette (F1) and pick the command. A focus change (a view the extension reveals) can close
  // the palette right after it opened, so try a few times.
  const input = page.locator('.quick-input-widget .quick-input-box input');
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    try {
      await input.waitFor({ state: 'visible', timeout: 4000 });
      await sleep(200);
      if (await input.isVisible()) break;
    } catch (e) {
      if (attempt >= 3) throw e;
    }
    if (attempt >= 3) throw new Error('the command palette did not stay open');
  }
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: SHORT });
  await row.click({ timeout: SHORT });
}

/** Types into the input box the extension opens (titled `title`) and accepts it. */
async function answerInputBox(title, value) {
  await page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ state: 'visible', timeout: SHORT });
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.fill(value);
  await sleep(150);
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: SHORT });
}

function findFiles(dir, pred, out = []) {
  let entries = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) findFiles(p, pred, out);
    else if (pred(e.name, p)) out.push(p);
  }
  return out;
}

/** The "Stepwise Server" output channel (the server's stderr), as VS Code logs it. */
function serverLog() {
  if (!userDataDir) return '';
  return findFiles(path.join(userDataDir, 'logs'), (n) => /Stepwise Server/.test(n))
    .map((f) => `--- ${f}\n${fs.readFileSync(f, 'utf8')}`)
    .join('\n');
}

function transcriptLog() {
  if (!userDataDir) return '';
  return findFiles(path.join(userDataDir, 'logs'), (n) => /-Stepwise\.log$/.test(n))
    .map((f) => fs.readFileSync(f, 'utf8'))
    .join('\n');
}

async function screenshot(name) {
  if (!page) return undefined;
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name);
  try {
    await page.screenshot({ path: file, timeout: SHORT });
    return file;
  } catch (e) {
    log(`screenshot failed: ${e.message}`);
    return undefined;
  }
}

let failed = false;
/** Runs a step; on failure dumps a screenshot, the server log and the mock log, and skips the later steps. */
function step(name, fn, timeout = 4 * LONG) {
  test(name, { timeout }, async (t) => {
    if (failed) {
      t.skip('an earlier step failed');
      return;
    }
    try {
      await fn();
    } catch (e) {
      failed = true;
      const slug = name.replace(/[^a-z0-9]+/gi, '-').toLowerCase().slice(0, 60);
      const shot = await screenshot(`failure-${slug}.png`);
      const server = serverLog();
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      fs.writeFileSync(path.join(ARTIFACTS, 'server.log'), server);
      fs.writeFileSync(path.join(ARTIFACTS, 'mock-model.log'), mockLog);
      fs.writeFileSync(path.join(ARTIFACTS, 'code-server.log'), codeServerLog);
      console.error(`\n[e2e] step failed: ${name}\n[e2e] screenshot: ${shot ?? '(none)'}`);
      console.error(`[e2e] status bar: ${await statusBarText().catch(() => '?')}`);
      console.error(`[e2e] ---- server log (Stepwise Server) ----\n${server.slice(-6000) || '(empty)'}`);
      console.error(`[e2e] ---- transcript ----\n${transcriptLog().slice(-3000) || '(empty)'}`);
      console.error(`[e2e] ---- mock model ----\n${mockLog.slice(-3000) || '(empty)'}`);
      console.error(`[e2e] ---- code-server (tail) ----\n${codeServerLog.slice(-3000) || '(empty)'}`);
      console.error(`[e2e] ---- browser console (tail) ----\n${consoleLog.slice(-3000) || '(empty)'}`);
      fs.writeFileSync(path.join(ARTIFACTS, 'browser-console.log'), consoleLog);
      throw e;
    }
  });
}

let bundledServer;

/** Command lines of running `stepwise lsp` processes (the extension's server). */
function serverProcesses() {
  const ps = spawnSync('ps', ['-ww', '-eo', 'args='], { encoding: 'utf8' });
  return (ps.stdout ?? '').split('\n').filter((l) => /\/stepwise lsp( --stdio)?$/.test(l.trim()));
}

let userSettings = {};
/** Writes the user settings.json (VS Code watches it and applies changes). */
function writeSettings(changes) {
  userSettings = { ...userSettings, ...changes };
  fs.writeFileSync(path.join(userDataDir, 'User', 'settings.json'), JSON.stringify(userSettings, null, 2));
}

/**
 * Writes the workspace folder's .vscode/settings.json. (code-server does not pick up changes of the user
 * settings.json on disk while it runs; the workspace file is watched.)
 */
let folderSettings = {};
function writeFolderSettings(changes) {
  folderSettings = { ...folderSettings, ...changes };
  fs.mkdirSync(path.join(workspaceDir, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(workspaceDir, '.vscode', 'settings.json'), JSON.stringify(folderSettings, null, 2));
}

/** The toasts VS Code shows (notifications). */
async function toastText() {
  return text('.notifications-toasts .notification-toast');
}

async function clearToasts() {
  // "Notifications: Clear All Notifications"
  await runCommand('Clear All Notifications').catch(() => undefined);
  await page.keyboard.press('Escape');
}

// ---- setup ----------------------------------------------------------------------------------------------

let workspaceDir;
let extensionsDir;
let base;
let greetPath;
let recordPath;

before(async () => {
  try {
    await setUp();
  } catch (e) {
    failed = true;
    console.error(`\n[e2e] set-up failed: ${e.message}`);
    await screenshot('failure-setup.png');
    console.error(`[e2e] ---- mock model ----\n${mockLog.slice(-3000) || '(empty)'}`);
    console.error(`[e2e] ---- code-server (tail) ----\n${codeServerLog.slice(-3000) || '(empty)'}`);
    throw e;
  }
});

async function setUp() {
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  for (const [what, p] of [
    ['mock-model binary', MOCK_MODEL_BIN],
    ['code-server', CODE_SERVER],
    ['extension .vsix', VSIX],
    ['chromium', CHROMIUM],
  ]) {
    assert.ok(fs.existsSync(p), `${what} not found at ${p}`);
  }
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'stepwise-e2e-'));
  workspaceDir = path.join(scratch, 'demo');
  fs.cpSync(path.join(EXT_ROOT, 'test/fixture/demo'), workspaceDir, { recursive: true });
  greetPath = path.join(workspaceDir, 'greet.js');
  userDataDir = path.join(scratch, 'user-data');
  extensionsDir = path.join(scratch, 'extensions');
  const stateDir = path.join(scratch, 'state');
  fs.mkdirSync(path.join(userDataDir, 'User'), { recursive: true });
  fs.mkdirSync(stateDir, { recursive: true });

  // The mock model.
  const scriptPath = path.join(scratch, 'script.json');
  recordPath = path.join(scratch, 'requests.jsonl');
  fs.writeFileSync(scriptPath, JSON.stringify(SCRIPT, null, 2));
  let resolveUrl;
  const urlPromise = new Promise((r) => (resolveUrl = r));
  start('mock-model', MOCK_MODEL_BIN, ['--script', scriptPath, '--record', recordPath], { env }, (d) => {
    mockLog += d;
    const m = /listening (http:\/\/127\.0\.0\.1:\d+)/.exec(mockLog);
    if (m) resolveUrl(m[1]);
  });
  const mockUrl = await Promise.race([urlPromise, sleep(SHORT).then(() => undefined)]);
  assert.ok(mockUrl, `mock-model did not print "listening http://127.0.0.1:PORT" within ${SHORT} ms; output: ${mockLog}`);
  log(`mock model at ${mockUrl}`);

  // Install the .vsix.
  const install = spawnSync(
    process.execPath,
    [CODE_SERVER, '--install-extension', VSIX, '--force', '--extensions-dir', extensionsDir, '--user-data-dir', userDataDir],
    { encoding: 'utf8', timeout: 2 * LONG, env: { ...env, VSCODE_CLI: '1' } },
  );
  assert.equal(install.status, 0, `installing the .vsix failed: ${install.stdout}\n${install.stderr}`);
  assert.match(install.stdout + install.stderr, /stepwise/i);
  bundledServer = findFiles(extensionsDir, (n, p) => n === 'stepwise' && p.includes(`${path.sep}server${path.sep}`))[0];
  assert.ok(bundledServer, `the installed extension carries its server (server/stepwise) under ${extensionsDir}`);

  // Settings: the server, the mock model, no prompts or distractions.
  writeSettings(
      {
        'stepwise.provider': 'anthropic',
        'stepwise.model': 'mock-model',
        'stepwise.baseUrl': mockUrl,
        'stepwise.approval': 'auto',
        'stepwise.trace.server': 'verbose',
        'security.workspace.trust.enabled': false,
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'workbench.enableExperiments': false,
        'workbench.welcomePage.walkthroughs.openOnInstall': false,
        'telemetry.telemetryLevel': 'off',
        'extensions.autoUpdate': false,
        'extensions.autoCheckUpdates': false,
        'extensions.ignoreRecommendations': true,
        'update.mode': 'none',
        'chat.commandCenter.enabled': false,
        'chat.disableAIFeatures': true,
        'files.autoSave': 'off',
        'editor.codeLens': true,
        'window.dialogStyle': 'custom',
        'git.enabled': false,
      },
  );

  // code-server.
  const port = await freePort();
  const csEnv = { ...env, VSCODE_CLI: '1', STEPWISE_STATE_DIR: stateDir, XDG_STATE_HOME: stateDir };
  for (const k of ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_BASE_URL', 'OPENAI_BASE_URL', 'MODEL_ID', 'STEPWISE_PROVIDER']) delete csEnv[k];
  // No `stepwise` on PATH (nor in ~/.cargo/bin): the extension must use the server it carries.
  csEnv.PATH = (env.PATH ?? '').split(path.delimiter).filter((d) => d && !fs.existsSync(path.join(d, 'stepwise'))).join(path.delimiter);
  csEnv.HOME = path.join(scratch, 'home');
  fs.mkdirSync(csEnv.HOME, { recursive: true });
  assert.notEqual(spawnSync('sh', ['-c', 'command -v stepwise'], { env: csEnv }).status, 0, 'stepwise must not be on PATH');
  if (KEY_VIA_ENV) csEnv.ANTHROPIC_API_KEY = 'dummy-e2e-key';
  const configPath = path.join(scratch, 'code-server.yaml');
  fs.writeFileSync(configPath, 'auth: none\n');
  start(
    'code-server',
    process.execPath,
    [
      CODE_SERVER,
      '--config', configPath,
      '--auth', 'none',
      '--bind-addr', `127.0.0.1:${port}`,
      '--user-data-dir', userDataDir,
      '--extensions-dir', extensionsDir,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      '--ignore-last-opened',
      workspaceDir,
    ],
    { env: csEnv, cwd: scratch },
    (d) => (codeServerLog += d),
  );
  base = `http://127.0.0.1:${port}`;
  await waitFor('code-server /healthz', () => fetch(`${base}/healthz`).then((r) => r.status), (s) => s === 200, LONG);
  log(`code-server at ${base}`);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: LONG,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(SHORT);
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') consoleLog += `[${m.type()}] ${m.text().replace(/%c|color: #[0-9a-f]+/g, '').slice(0, 400)}\n`;
  });
  await page.goto(`${base}/?folder=${encodeURIComponent(workspaceDir)}`, { timeout: LONG });
}

after(async () => {
  stopped = true;
  if (page) await screenshot('last.png');
  const server = serverLog();
  if (ARTIFACTS) {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    fs.writeFileSync(path.join(ARTIFACTS, 'server.log'), server);
    fs.writeFileSync(path.join(ARTIFACTS, 'transcript.log'), transcriptLog());
    fs.writeFileSync(path.join(ARTIFACTS, 'mock-model.log'), mockLog);
    fs.writeFileSync(path.join(ARTIFACTS, 'code-server.log'), codeServerLog);
    if (recordPath && fs.existsSync(recordPath)) fs.copyFileSync(recordPath, path.join(ARTIFACTS, 'requests.jsonl'));
  }
  await browser?.close().catch(() => undefined);
  for (const { child } of procs.reverse()) {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      /* gone */
    }
  }
  await sleep(500);
  for (const { child } of procs) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  if (scratch && env.STEPWISE_E2E_KEEP !== '1') fs.rmSync(scratch, { recursive: true, force: true });
});

// ---- the steps ------------------------------------------------------------------------------------------

step('the workbench loads; a window that has not used stepwise gets no server', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  // The activity bar has the Stepwise container.
  await page.locator('.part.activitybar .action-item [aria-label^="Stepwise"], .part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: SHORT });
  // Its transcript opens (the extension is active), yet no server was started: no status item, no process.
  await runCommand('Stepwise: Show Transcript');
  await waitFor('the Stepwise output channel', () => text('.part.panel'), (t) => /Stepwise/.test(t), LONG);
  assert.doesNotMatch(serverLog(), /starting \S+ lsp/);
  assert.deepEqual(serverProcesses(), []);
  assert.doesNotMatch(await statusBarText(), /stepwise/);
});

step('opening a file of the workspace', async () => {
  await page.locator('.part.editor').click({ position: { x: 300, y: 200 } }).catch(() => undefined);
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: SHORT });
  await input.fill('greet.js');
  await page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: 'greet.js' }).first().waitFor({ timeout: SHORT });
  await page.keyboard.press('Enter');
  await waitFor('greet.js in the editor', editorText, (t) => t.includes(ORIGINAL), SHORT);
});

if (!KEY_VIA_ENV) {
  step('Set API Key stores the key in SecretStorage (and starts no server for it)', async () => {
    await runCommand('Stepwise: Set API Key');
    await answerInputBox('Stepwise: Set API Key', 'dummy-e2e-key');
    await waitFor('the key saved', toastText, (t) => t.includes('stepwise: API key for anthropic saved.'), LONG);
    // Setting a key is not a reason to start a server.
    assert.deepEqual(serverProcesses(), []);
    await clearToasts();
  });
}

step('Run Task: the agent plans, edits the open file in the editor and finishes', async () => {
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', PROMPT_1);
  await waitStatus(/stepwise: idle 2\/2/, LONG);
  // The server is the one in the package.
  assert.ok(serverLog().includes(`starting ${bundledServer} lsp`), `the bundled server ${bundledServer} was started:\n${serverLog().slice(-2000)}`);
  assert.deepEqual(serverProcesses(), [`${bundledServer} lsp --stdio`], 'one server process, the bundled one');

  // The plan view lists the items with their states, and done/total in its title.
  const rows = await waitFor(
    'the plan view rows',
    planRows,
    (r) => r.includes('completed: Read greet.js') && r.includes('completed: Make the greeting friendlier'),
    SHORT,
  );
  log('plan rows:', rows.filter((r) => /^(completed|pending|in progress|failed):/.test(r)));
  await waitFor('the plan view title 2/2', () => text('.part.sidebar .composite.title, .part.sidebar .pane-header'), (t) => /plan 2\/2/i.test(t), SHORT);

  // The code lens with done/total in the open file.
  await waitFor('the code lens "stepwise 2/2"', () => text('.part.editor .codelens-decoration'), (t) => /stepwise 2\/2 · done/.test(t), LONG);
  // ... and the lens on the edited range, naming the plan step it was made for.
  await waitFor('the edit lens', () => text('.part.editor .codelens-decoration'), (t) => t.includes('✎ stepwise: Make the greeting friendlier'), SHORT);

  // The edit is in the editor, and the document was saved for the shell command (stepwise/saveDocuments).
  await waitFor('the edit in the editor', editorText, (t) => t.includes(EDITED), SHORT);
  await waitFor('greet.js saved by the editor', async () => fs.readFileSync(greetPath, 'utf8'), (t) => t.includes(EDITED), SHORT);
  const dirty = await page.locator('.part.editor .tab.dirty', { hasText: 'greet.js' }).count();
  assert.equal(dirty, 0, 'greet.js should have been saved (not dirty) after the stepwise/saveDocuments request');

  // The transcript (output channel "Stepwise"): tool calls, their output, assistant text, token usage.
  const transcript = await waitFor(
    'the transcript',
    async () => transcriptLog() || (await text('.part.panel .monaco-editor .view-lines')),
    (t) => /run ended: end_turn/.test(t),
    SHORT,
  );
  for (const needle of [PROMPT_1, '▶ edit_file', '▶ bash', 'The greeting is friendlier now.', 'tokens']) {
    assert.ok(transcript.includes(needle), `transcript lacks ${JSON.stringify(needle)}:\n${transcript}`);
  }
  // The prompt reached the model.
  const requests = fs.existsSync(recordPath) ? fs.readFileSync(recordPath, 'utf8') : '';
  assert.ok(requests.includes(PROMPT_1), 'the mock model should have received the prompt');
  await screenshot('run1.png');
});

step('a second run shows its states: completed, in progress with activeForm, pending', async () => {
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', PROMPT_2);
  await waitStatus(/stepwise: running 1\/3/, LONG);
  const rows = await waitFor(
    'the plan view rows of run 2',
    planRows,
    (r) =>
      r.includes('completed: Look at greet.js') &&
      r.includes('in progress: Add a farewell function, Adding a farewell function') &&
      r.includes('pending: Export farewell'),
    LONG,
  );
  log('plan rows:', rows.filter((r) => /^(completed|pending|in progress|failed):/.test(r)));
  // The in-progress item's activeForm is shown as its description.
  await waitFor('the activeForm in the plan view', () => text('.part.sidebar .monaco-list-row'), (t) => t.includes('Adding a farewell function'), SHORT);
  await waitFor('the plan view title 1/3', () => text('.part.sidebar .composite.title, .part.sidebar .pane-header'), (t) => /plan 1\/3/i.test(t), SHORT);
  await waitFor('the code lens "stepwise 1/3"', () => text('.part.editor .codelens-decoration'), (t) => /stepwise 1\/3 · Add a farewell function/.test(t), LONG);
});

step('Stepwise: Cancel stops the hanging run', async () => {
  await sleep(500);
  await runCommand('Stepwise: Cancel');
  await waitStatus(/stepwise: cancelled 1\/3/, LONG);
  const rows = await planRows();
  assert.ok(rows.includes('pending: Export farewell'), 'the plan stays after a cancel');
});

step('the edit is in the editor undo history', async () => {
  await page.locator('.part.editor .view-lines').first().click();
  await page.keyboard.press('Control+Z');
  await waitFor('undo restores the original line', editorText, (t) => t.includes(ORIGINAL), SHORT);
  await page.keyboard.press('Control+Shift+Z');
  await waitFor('redo brings the edit back', editorText, (t) => t.includes(EDITED), SHORT);
  await page.keyboard.press('Control+S');
  await sleep(500);
});

step('after a reload the folder with a saved session gets its server, and the plan back, with no command', async () => {
  await screenshot('cancelled.png');
  const before = serverLog().length;
  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await waitStatus(/stepwise: idle 1\/3/, LONG);
  await waitFor('the code lens "stepwise 1/3" without any command', () => text('.part.editor .codelens-decoration'), (t) => /stepwise 1\/3/.test(t), LONG);
  await waitFor('the reason in the server log', async () => serverLog().slice(before), (l) => /a saved session in demo: starting the server/.test(l), SHORT);
  await runCommand('Stepwise: Show Plan');
  await waitFor(
    'the restored plan rows',
    planRows,
    (r) => r.includes('completed: Look at greet.js') && r.includes('pending: Export farewell') && r.some((x) => x.startsWith('in progress: Add a farewell function')),
    LONG,
  );
  await waitFor('the plan view title 1/3', () => text('.part.sidebar .composite.title, .part.sidebar .pane-header'), (t) => /plan 1\/3/i.test(t), SHORT);
  await waitFor('the code lens "stepwise 1/3"', () => text('.part.editor .codelens-decoration'), (t) => /stepwise 1\/3/.test(t), LONG);
  await screenshot('restored.png');
});

step('Stepwise: New Session empties the plan', async () => {
  await runCommand('Stepwise: New Session');
  await waitFor('the empty plan view (welcome text)', () => text('.part.sidebar'), (t) => t.includes('No plan yet'), LONG);
  const rows = await planRows();
  assert.ok(!rows.some((r) => /^(completed|pending|in progress):/.test(r)), `no plan rows after a new session: ${rows}`);
  await waitFor('the plan view title without counts', () => text('.part.sidebar .composite.title, .part.sidebar .pane-header'), (t) => /plan/i.test(t) && !/\d+\/\d+/.test(t), SHORT);
  await waitFor('no code lens', () => page.locator('.part.editor .codelens-decoration', { hasText: 'stepwise' }).count(), (n) => n === 0, LONG);
  await clearToasts();
});

step('approval "ask": the shell command waits for Allow in a VS Code notification', async () => {
  const before = serverLog().length;
  writeFolderSettings({ 'stepwise.approval': 'ask' });
  await waitFor('the server to pull approval "ask"', async () => serverLog().slice(before), (l) => /settings for .*"approval":"ask"/.test(l), LONG);
  await sleep(500);
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', 'Count the lines');
  await waitStatus(/stepwise: waiting 0\/1/, LONG);
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'wants to run a shell command' });
  await toast.waitFor({ state: 'visible', timeout: LONG });
  assert.match(norm(await toast.textContent()), /wc -l < greet\.js/);
  await screenshot('approval.png');
  await toast.locator('.monaco-button', { hasText: /^Allow$/ }).click({ timeout: SHORT });
  await waitStatus(/stepwise: idle 1\/1/, LONG);
  await waitFor('the code lens "stepwise 1/1 · done"', () => text('.part.editor .codelens-decoration'), (t) => /stepwise 1\/1 · done/.test(t), LONG);
  const transcript = await waitFor('the transcript of run 3', async () => transcriptLog(), (t) => t.includes('greet.js has 6 lines.'), SHORT);
  assert.match(transcript, /▶ bash wc -l < greet\.js\n\s+✓ bash\n\s+6/);
  await screenshot('approved.png');
});

step('Check Setup shows what the server sees (stepwise doctor), never the key', async () => {
  await clearToasts();
  const before = serverLog().length;
  await runCommand('Stepwise: Check Setup');
  await waitFor('the ready message', toastText, (t) => t.includes('stepwise: ready in demo (model mock-model).'), LONG);
  const report = await waitFor('the report in the server log', async () => serverLog().slice(before), (l) => /ready: a run can reach the model/.test(l), SHORT);
  assert.ok(report.includes(`stepwise doctor: stepwise `) && report.includes(` for ${fs.realpathSync(workspaceDir)}`), report);
  assert.match(report, /model +mock-model \(VS Code settings\)/);
  assert.match(report, /API key +ANTHROPIC_API_KEY is set \((environment)\)/);
  assert.match(report, /session +\S+demo-[0-9a-f]{16}\.json/);
  assert.ok(!serverLog().includes('dummy-e2e-key'), 'the key is never shown');
  await clearToasts();
});

step('a missing model or server binary gives a clear message with the fix', async () => {
  await clearToasts();
  writeFolderSettings({ 'stepwise.model': '' });
  await sleep(1500);
  await runCommand('Stepwise: Run Task');
  await waitFor('the "no model" message', toastText, (t) => /stepwise: no model is configured: set stepwise\.model/.test(t), LONG);
  await clearToasts();
  writeFolderSettings({ 'stepwise.model': 'mock-model' });

  const missing = path.join(scratch, 'nowhere', 'stepwise');
  writeFolderSettings({ 'stepwise.serverPath': missing });
  await waitFor(
    'the "binary not found" message',
    toastText,
    (t) => t.includes(`stepwise: server binary not found at ${missing}. Install it with`) && t.includes('cargo install --path server') && t.includes('stepwise.serverPath'),
    LONG,
  );
  await waitStatus(/stepwise: no server/, SHORT);
  await screenshot('missing-binary.png');
  await clearToasts();
  writeFolderSettings({ 'stepwise.serverPath': '' });
  await waitStatus(/stepwise: idle/, LONG);
  await waitFor('the plan back from the restarted server', planRows, (r) => r.includes('completed: Count the lines of greet.js'), LONG);
  await clearToasts();
});

step('multi-root: one server for all folders, Run Task asks which folder', async () => {
  const demo2 = path.join(scratch, 'demo2');
  fs.cpSync(path.join(EXT_ROOT, 'test/fixture/demo'), demo2, { recursive: true });
  const wsFile = path.join(scratch, 'multi.code-workspace');
  fs.writeFileSync(wsFile, JSON.stringify({ folders: [{ path: path.basename(workspaceDir) }, { path: path.basename(demo2) }] }, null, 2));
  // code-server sometimes opens a workspace with no folders when it is navigated to while the previous window
  // is still shutting down (it reads the .code-workspace as empty); a reload reads it again.
  await page.goto(`${base}/?workspace=${encodeURIComponent(wsFile)}`, { timeout: LONG });
  for (let attempt = 1; ; attempt++) {
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
    const sidebar = await waitFor('the explorer with the two folders (or none)', () => text('.part.sidebar'), (t) => t.includes('demo2') || /not yet added a folder/i.test(t), LONG);
    if (sidebar.includes('demo2')) break;
    assert.ok(attempt < 3, 'code-server opened the multi-root workspace without its folders three times');
    log(`the workspace opened without folders; reloading (attempt ${attempt})`);
    await sleep(1000);
    await page.reload({ timeout: LONG });
  }
  await waitStatus(/stepwise: idle/, LONG);
  await page.keyboard.press('Escape');
  await runCommand('Stepwise: Run Task');
  // No active editor and two folders: a quick pick asks which one.
  await page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: 'demo2' }).first().waitFor({ timeout: SHORT });
  const choices = await page.locator('.quick-input-widget .quick-input-list .monaco-list-row .label-name').allTextContents();
  assert.deepEqual(choices.map(norm).sort(), ['demo', 'demo2']);
  await page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: 'demo2' }).first().click();
  await answerInputBox('Stepwise: Run Task', 'Inspect the second folder');
  await runCommand('Stepwise: Show Plan');
  const rows = await waitFor(
    'folder nodes in the plan view',
    planRows,
    (r) => r.includes('demo2: 1 of 1 completed') && r.includes('completed: Inspect demo2') && r.includes('demo: 1 of 1 completed'),
    LONG,
  );
  log('plan rows:', rows.filter((r) => /^(demo|demo2|completed|pending|in progress):/.test(r)));
  await waitFor('the plan view title 2/2', () => text('.part.sidebar .composite.title, .part.sidebar .pane-header'), (t) => /plan 2\/2/i.test(t), SHORT);
  // The run went to demo2 (the model's system prompt names its folder), and one server serves both folders.
  const requests = fs.readFileSync(recordPath, 'utf8').trim().split('\n');
  assert.match(requests[requests.length - 1], /coding agent at [^"]*demo2/);
  const starts = serverLog().match(/starting \S+ lsp for [^\n]*/g) ?? [];
  assert.ok(starts.some((l) => l.includes(`${workspaceDir}, ${demo2}`)), `one server for both folders: ${starts.join(' | ')}`);
  await screenshot('multi-root.png');
});

step('clicking the status-bar item cancels a run', async () => {
  await runCommand('Stepwise: Run Task');
  await page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: 'demo2' }).first().click({ timeout: SHORT });
  await answerInputBox('Stepwise: Run Task', 'Wait forever');
  await waitStatus(/stepwise: running 0\/1/, LONG);
  await page.locator('.part.statusbar .statusbar-item', { hasText: 'stepwise: running' }).first().click({ timeout: SHORT });
  await waitStatus(/stepwise: cancelled 0\/1/, LONG);
});

step('final screenshot', async () => {
  await page.mouse.move(5, 5);
  await sleep(500);
  const file = await screenshot('final.png');
  assert.ok(file && fs.existsSync(file), 'final.png written');
  log(`screenshot: ${file}`);
});
