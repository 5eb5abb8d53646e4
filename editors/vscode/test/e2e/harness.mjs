// The harness of the end-to-end tests of the stepwise extension in real VS Code (code-server), driven with
// playwright-core in Debian's chromium, against the real `stepwise lsp` and the scripted mock model of the
// tests crate. A test file calls `useCodeServer(script)` once and defines its `step`s in order.
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

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const EXT_ROOT = path.resolve(HERE, '../..');
export const REPO = path.resolve(EXT_ROOT, '../..');
export const env = process.env;
export const MOCK_MODEL_BIN = env.MOCK_MODEL_BIN ?? path.join(REPO, 'target/debug/mock-model');
export const CODE_SERVER_DIR = env.CODE_SERVER_DIR ?? path.join(os.homedir(), '.cache/stepwise-tools/code-server');
export const CODE_SERVER = path.join(CODE_SERVER_DIR, 'node_modules/code-server/out/node/entry.js');
export const VSIX = env.VSIX ?? path.join(EXT_ROOT, 'stepwise-linux-x64.vsix');
export const CHROMIUM = env.CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = env.ARTIFACTS_DIR ?? path.join(EXT_ROOT, 'test-artifacts');
/** Set API Key through the UI (SecretStorage); with STEPWISE_E2E_KEY_VIA_ENV=1 the key comes from the environment. */
export const KEY_VIA_ENV = env.STEPWISE_E2E_KEY_VIA_ENV === '1';

export const LONG = 60_000;
export const SHORT = 15_000;

// ---- helpers --------------------------------------------------------------------------------------------

const procs = [];
export let scratch;
export let page;
export let browser;
export let userDataDir;
export let mockLog = '';
export let codeServerLog = '';
export let consoleLog = '';
export let stopped = false;

export function log(...args) {
  console.log('[e2e]', ...args);
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

export function freePort() {
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

export function start(name, cmd, args, opts, onData) {
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
export async function waitFor(desc, probe, ok, timeout = LONG) {
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

export const norm = (s) => (s ?? '').replace(/\u00a0/g, ' ');

export async function text(selector) {
  const all = await page.locator(selector).allTextContents();
  return norm(all.join('\n'));
}

export async function statusBarText() {
  return text('.part.statusbar .statusbar-item');
}

export async function waitStatus(re, timeout = LONG) {
  return waitFor(`status bar ${re}`, statusBarText, (t) => re.test(t), timeout);
}

export async function editorText() {
  return text('.part.editor .monaco-editor .view-lines');
}

export async function planRows() {
  return page.locator('.monaco-list-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('aria-label') ?? ''));
}

export async function runCommand(title) {
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
  // A click that lands as the list redraws its rows picks nothing, and the palette stays open with the title
  // typed (seen in CI): then the highlighted first row, the command, is picked with Enter. A command that opens
  // a question of its own reuses the widget with other text, which this leaves alone.
  const stillTyped = async () => (await input.isVisible()) && (await input.inputValue()) === `>${title}`;
  const closed = await waitFor('the palette to close', stillTyped, (open) => !open, 3000).then(() => true, () => false);
  if (!closed && (await stillTyped())) await page.keyboard.press('Enter');
}

/** Opens a file of the workspace by name through Quick Open (Ctrl+P). */
export async function openFile(name) {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: SHORT });
  await input.fill(name);
  await page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: SHORT });
  await page.keyboard.press('Enter');
}

/**
 * Collapses the Conversation view, so the server's approvals come as VS Code notifications (as they do
 * whenever the view is closed). Opens the Stepwise container first.
 */
export async function closeConversationView() {
  await runCommand('Stepwise: Show Plan');
  const header = page.locator('.pane-header', { hasText: /^\s*Conversation/i }).first();
  await header.waitFor({ state: 'visible', timeout: SHORT });
  if ((await header.getAttribute('aria-expanded')) === 'true') await header.click();
  await waitFor('the Conversation view collapsed', () => header.getAttribute('aria-expanded'), (v) => v === 'false', SHORT);
}

/** Types into the input box the extension opens (titled `title`) and accepts it. */
export async function answerInputBox(title, value) {
  await page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ state: 'visible', timeout: SHORT });
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.fill(value);
  await sleep(150);
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: SHORT });
}

export function findFiles(dir, pred, out = []) {
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
/** The model's requests as the mock recorded them (none before the first). */
export function requests() {
  if (!recordPath || !fs.existsSync(recordPath)) return [];
  return fs.readFileSync(recordPath, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

export function serverLog() {
  if (!userDataDir) return '';
  return findFiles(path.join(userDataDir, 'logs'), (n) => /Stepwise Server/.test(n))
    .map((f) => `--- ${f}\n${fs.readFileSync(f, 'utf8')}`)
    .join('\n');
}

export function transcriptLog() {
  if (!userDataDir) return '';
  return findFiles(path.join(userDataDir, 'logs'), (n) => /-Stepwise\.log$/.test(n))
    .map((f) => fs.readFileSync(f, 'utf8'))
    .join('\n');
}

export async function screenshot(name) {
  if (!page) return undefined;
  fs.mkdirSync(artifacts, { recursive: true });
  const file = path.join(artifacts, name);
  try {
    await page.screenshot({ path: file, timeout: SHORT });
    return file;
  } catch (e) {
    log(`screenshot failed: ${e.message}`);
    return undefined;
  }
}

export let failed = false;
/** Runs a step; on failure dumps a screenshot, the server log and the mock log, and skips the later steps. */
export function step(name, fn, timeout = 4 * LONG) {
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
      fs.mkdirSync(artifacts, { recursive: true });
      fs.writeFileSync(path.join(artifacts, 'server.log'), server);
      fs.writeFileSync(path.join(artifacts, 'mock-model.log'), mockLog);
      fs.writeFileSync(path.join(artifacts, 'code-server.log'), codeServerLog);
      console.error(`\n[e2e] step failed: ${name}\n[e2e] screenshot: ${shot ?? '(none)'}`);
      console.error(`[e2e] status bar: ${await statusBarText().catch(() => '?')}`);
      console.error(`[e2e] ---- server log (Stepwise Server) ----\n${server.slice(-6000) || '(empty)'}`);
      console.error(`[e2e] ---- transcript ----\n${transcriptLog().slice(-3000) || '(empty)'}`);
      console.error(`[e2e] ---- mock model ----\n${mockLog.slice(-3000) || '(empty)'}`);
      console.error(`[e2e] ---- code-server (tail) ----\n${codeServerLog.slice(-3000) || '(empty)'}`);
      console.error(`[e2e] ---- browser console (tail) ----\n${consoleLog.slice(-3000) || '(empty)'}`);
      fs.writeFileSync(path.join(artifacts, 'browser-console.log'), consoleLog);
      throw e;
    }
  });
}

export let bundledServer;

/** Command lines of running `stepwise lsp` processes (the extension's server). */
export function serverProcesses() {
  const ps = spawnSync('ps', ['-ww', '-eo', 'args='], { encoding: 'utf8' });
  return (ps.stdout ?? '').split('\n').filter((l) => /\/stepwise lsp( --stdio)?$/.test(l.trim()));
}

export let userSettings = {};
/** Writes the user settings.json (VS Code watches it and applies changes). */
export function writeSettings(changes) {
  userSettings = { ...userSettings, ...changes };
  fs.writeFileSync(path.join(userDataDir, 'User', 'settings.json'), JSON.stringify(userSettings, null, 2));
}

/**
 * Writes the workspace folder's .vscode/settings.json. (code-server does not pick up changes of the user
 * settings.json on disk while it runs; the workspace file is watched.)
 */
export let folderSettings = {};
export function writeFolderSettings(changes) {
  folderSettings = { ...folderSettings, ...changes };
  fs.mkdirSync(path.join(workspaceDir, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(workspaceDir, '.vscode', 'settings.json'), JSON.stringify(folderSettings, null, 2));
}

/** The toasts VS Code shows (notifications). */
export async function toastText() {
  return text('.notifications-toasts .notification-toast');
}

export async function clearToasts() {
  // "Notifications: Clear All Notifications"
  await runCommand('Clear All Notifications').catch(() => undefined);
  await page.keyboard.press('Escape');
}

// ---- setup ----------------------------------------------------------------------------------------------

export let workspaceDir;
export let extensionsDir;
export let base;
export let greetPath;
export let recordPath;

/**
 * Starts the mock model with `script`, code-server with the .vsix installed, and chromium on the demo folder
 * before the file's steps; stops them after. Options: `artifacts` (a subfolder of ARTIFACTS_DIR for this
 * file), `keyViaEnv` (the API key in the environment rather than set through the UI), `settings` (more user
 * settings), `routes` (scripts of their own for conversations whose first message holds a key, for sessions side
 * by side: `[{key, steps}]`, mock-model's `--routes`).
 */
export function useCodeServer(script, options = {}) {
  before(async () => {
    try {
      await setUp(script, options);
    } catch (e) {
      failed = true;
      console.error(`\n[e2e] set-up failed: ${e.message}`);
      await screenshot('failure-setup.png');
      console.error(`[e2e] ---- mock model ----\n${mockLog.slice(-3000) || '(empty)'}`);
      console.error(`[e2e] ---- code-server (tail) ----\n${codeServerLog.slice(-3000) || '(empty)'}`);
      throw e;
    }
  });
  after(tearDown);
}

/** Where this file's artifacts go. */
export let artifacts = ARTIFACTS;

async function setUp(script, options) {
  artifacts = options.artifacts ? path.join(ARTIFACTS, options.artifacts) : ARTIFACTS;
  // The files of an earlier run (not the folders of the other test files).
  fs.mkdirSync(artifacts, { recursive: true });
  for (const e of fs.readdirSync(artifacts, { withFileTypes: true })) if (e.isFile()) fs.rmSync(path.join(artifacts, e.name));
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
  fs.writeFileSync(scriptPath, JSON.stringify(script, null, 2));
  const mockArgs = ['--script', scriptPath, '--record', recordPath];
  if (options.routes) {
    const routesPath = path.join(scratch, 'routes.json');
    fs.writeFileSync(routesPath, JSON.stringify(options.routes, null, 2));
    mockArgs.push('--routes', routesPath);
  }
  let resolveUrl;
  const urlPromise = new Promise((r) => (resolveUrl = r));
  start('mock-model', MOCK_MODEL_BIN, mockArgs, { env }, (d) => {
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
        // Today's behaviour, which these steps were written for (the approval "ask" step waits for a
        // question a sandboxed command would not ask); the server's own tests cover the sandbox.
        'stepwise.sandbox': 'off',
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
        ...(options.settings ?? {}),
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
  if (KEY_VIA_ENV || options.keyViaEnv) csEnv.ANTHROPIC_API_KEY = 'dummy-e2e-key';
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

async function tearDown() {
  stopped = true;
  if (page) await screenshot('last.png');
  const server = serverLog();
  if (artifacts) {
    fs.mkdirSync(artifacts, { recursive: true });
    fs.writeFileSync(path.join(artifacts, 'server.log'), server);
    fs.writeFileSync(path.join(artifacts, 'transcript.log'), transcriptLog());
    fs.writeFileSync(path.join(artifacts, 'mock-model.log'), mockLog);
    fs.writeFileSync(path.join(artifacts, 'code-server.log'), codeServerLog);
    if (recordPath && fs.existsSync(recordPath)) fs.copyFileSync(recordPath, path.join(artifacts, 'requests.jsonl'));
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
}

// ---- the Conversation view ----------------------------------------------------------------------------------

/** The Conversation view's page: the frame (inside the webview's iframes) that holds its textarea. */
export async function viewFrame() {
  return waitFor(
    'the Conversation view page',
    async () => {
      for (const f of page.frames()) {
        if (f.isDetached()) continue;
        if ((await f.locator('textarea[aria-label="Message for the agent"]').count().catch(() => 0)) > 0) return f;
      }
      return undefined;
    },
    (f) => !!f,
    LONG,
  );
}

/** Collapses the container's other views, so the Conversation view has the sidebar's height. */
export async function onlyConversation() {
  for (const name of ['Plan', 'Transcript', 'Changes']) {
    const header = page.locator('.part.sidebar .pane-header', { hasText: new RegExp(`^\\s*${name}`, 'i') }).first();
    if ((await header.count()) > 0 && (await header.getAttribute('aria-expanded')) === 'true') await header.click();
  }
}
