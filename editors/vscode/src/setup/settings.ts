// Settings (`stepwise.*`) -> initializationOptions / workspace/configuration answers, the server's
// environment (API key) and the server binary. Pure logic: no `vscode` import.
import * as path from 'path';

export type Provider = 'anthropic' | 'openai';

/** Keys the server understands (docs/protocol.md, "Configuration"). `serverPath` stays in the extension. */
export const SERVER_KEYS = [
  'provider',
  'model',
  'baseUrl',
  'approval',
  'sandbox',
  'sandboxNetwork',
  'sandboxWritable',
  'reminderRounds',
  'maxRounds',
  'planningStyle',
  'apiKeyEnv',
  'bashTimeoutSecs',
  'requestTimeoutSecs',
  'mcpServers',
  'planFirst',
] as const;

const ENUMS: Record<string, readonly string[]> = {
  provider: ['anthropic', 'openai'],
  approval: ['ask', 'auto', 'deny'],
  sandbox: ['workspace-write', 'read-only', 'off'],
  sandboxNetwork: ['off', 'on'],
  planningStyle: ['todo', 'tasks'],
};
const POSITIVE_INTS = new Set(['reminderRounds', 'maxRounds', 'bashTimeoutSecs', 'requestTimeoutSecs']);

/**
 * The settings the server gets, from the `stepwise` configuration section (a plain object or VS Code's
 * WorkspaceConfiguration). Unset values (undefined, null, '') are left out so the server falls back to
 * its environment (MODEL_ID, ANTHROPIC_BASE_URL, ...); invalid values are left out too.
 */
export type SettingValue = string | number | boolean | string[] | Record<string, unknown>;

export function serverSettings(raw: unknown): Record<string, SettingValue> {
  const out: Record<string, SettingValue> = {};
  if (!raw || typeof raw !== 'object') return out;
  const src = raw as Record<string, unknown>;
  for (const key of SERVER_KEYS) {
    let value = src[key];
    if (value === undefined || value === null || typeof value === 'function') continue;
    if (typeof value === 'string') {
      value = value.trim();
      if (value === '') continue;
    }
    if (key === 'planFirst') {
      // Plan first: every run plans read-only and waits for approval (planFirst.ts has the toggle).
      if (typeof value === 'boolean') out[key] = value;
    } else if (key === 'sandboxWritable') {
      // Folders sandboxed commands may write: absolute paths (the server refuses others by name).
      if (Array.isArray(value)) {
        const dirs = value.filter((v): v is string => typeof v === 'string' && v.trim() !== '').map((v) => v.trim());
        if (dirs.length > 0) out[key] = dirs;
      }
    } else if (key === 'mcpServers') {
      // Passed whole: the server checks each entry and reports a bad one by name.
      if (typeof value === 'object' && !Array.isArray(value) && Object.keys(value as object).length > 0) {
        out[key] = JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
      }
    } else if (ENUMS[key]) {
      const v = String(value).toLowerCase();
      if (!ENUMS[key].includes(v)) continue;
      out[key] = v;
    } else if (POSITIVE_INTS.has(key)) {
      const n = typeof value === 'number' ? value : Number(value);
      if (!Number.isInteger(n) || n < 1) continue;
      out[key] = n;
    } else if (typeof value === 'string') {
      out[key] = value;
    }
  }
  return out;
}

/** initializationOptions for `initialize`: the server settings as a flat object. */
export function initializationOptions(raw: unknown): Record<string, SettingValue> {
  return serverSettings(raw);
}

export function effectiveProvider(setting: unknown, env: NodeJS.ProcessEnv): Provider {
  const s = typeof setting === 'string' ? setting.trim().toLowerCase() : '';
  if (s === 'anthropic' || s === 'openai') return s;
  const e = (env.STEPWISE_PROVIDER ?? '').trim().toLowerCase();
  return e === 'openai' ? 'openai' : 'anthropic';
}

export function apiKeyEnvName(provider: Provider): string {
  return provider === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY';
}

/** The SecretStorage key under which the API key of a provider is kept. */
export function secretKeyName(provider: Provider): string {
  return `stepwise.apiKey.${provider}`;
}

/**
 * The server process's environment: the extension host's, plus the API key from SecretStorage (which wins
 * over an inherited one, as the user set it explicitly in VS Code).
 */
export function serverEnv(base: NodeJS.ProcessEnv, provider: Provider, secret: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  if (secret && secret.trim() !== '') env[apiKeyEnvName(provider)] = secret.trim();
  return env;
}

/**
 * What `stepwise doctor --json` reports (server/src/cli/doctor.rs): the configuration as the server reads it
 * (environment, `.env` files, the settings passed with `--settings`), each value with where it came from.
 */
export interface DoctorItem {
  value?: string | null;
  variable: string;
  source: 'settings' | 'environment' | 'file' | 'default' | 'unset';
  file?: string;
}
export interface DoctorReport {
  version: string;
  workspace: string;
  envFiles: string[];
  provider: DoctorItem;
  model: DoctorItem;
  baseUrl: DoctorItem;
  apiKey: DoctorItem & { set: boolean };
  stateDir: string | null;
  session: string | null;
  missing: ('model' | 'apiKey')[];
  problems: string[];
  ok: boolean;
  /** Instruction files (AGENTS.md / CLAUDE.md) added to the system prompt. */
  instructions?: { path: string; scope: 'user' | 'workspace'; bytes: number; used: number; cut: boolean; error?: string | null }[];
  /** MCP servers found (none is started by doctor). */
  mcpServers?: { name: string; origin: string; transport: 'stdio' | 'http'; state: 'configured' | 'untrusted'; command?: string; args?: string[]; url?: string }[];
  mcpProblems?: string[];
  /** Whether shell commands can run sandboxed here: `by` what, or the `reason` they cannot (then they ask). */
  sandbox?: { mode: 'workspace-write' | 'read-only' | 'off'; network: 'off' | 'on'; available?: boolean; by?: string; reason?: string };
}

/** The arguments of `stepwise doctor` for a folder, with the settings the server would get. */
export function doctorArgs(folder: string, settings: Record<string, unknown>): string[] {
  // VS Code's own language servers answer the agent (`stepwise/query`): doctor starts none of stepwise's.
  return ['doctor', '--json', '--workspace', folder, '--settings', JSON.stringify(serverSettings(settings)), '--no-language-servers'];
}

/** Parses doctor's stdout; `undefined` when it is not a report. */
export function parseDoctorReport(stdout: string): DoctorReport | undefined {
  try {
    const r = JSON.parse(stdout.trim());
    return r && typeof r === 'object' && Array.isArray(r.problems) && Array.isArray(r.missing) ? (r as DoctorReport) : undefined;
  } catch {
    return undefined;
  }
}

function sourceText(item: DoctorItem): string {
  switch (item.source) {
    case 'settings':
      return 'VS Code settings';
    case 'file':
      return item.file ?? '.env';
    default:
      return item.source;
  }
}

/** The report as lines for an output channel. The key's value is not in the report, so never here. */
export function doctorReportLines(r: DoctorReport): string[] {
  const value = (name: string, item: DoctorItem) =>
    `  ${name.padEnd(10)} ${item.value ? `${item.value} (${sourceText(item)})` : `missing: set ${item.variable}`}`;
  const lines = [
    `stepwise doctor: stepwise ${r.version} for ${r.workspace}`,
    value('provider', r.provider),
    value('model', r.model),
    value('base URL', r.baseUrl),
    `  ${'API key'.padEnd(10)} ${r.apiKey.set ? `${r.apiKey.variable} is set (${sourceText(r.apiKey)})` : `${r.apiKey.variable} is not set`}`,
    `  ${'.env files'.padEnd(10)} ${r.envFiles.length ? r.envFiles.join(', ') : 'none'}`,
    `  ${'state dir'.padEnd(10)} ${r.stateDir ?? 'none'}`,
    `  ${'session'.padEnd(10)} ${r.session ?? 'none saved'}`,
  ];
  for (const f of r.instructions ?? []) {
    const what = f.error ? `unreadable: ${f.error}` : f.cut ? `${f.used} of ${f.bytes} bytes: cut at 32 KiB` : `${f.bytes} bytes`;
    lines.push(`  ${'instructions'.padEnd(10)} ${f.path} (${what})`);
  }
  for (const s of r.mcpServers ?? []) {
    const what = s.transport === 'http' ? s.url : [s.command, ...(s.args ?? [])].join(' ');
    const state = s.state === 'untrusted' ? 'not trusted yet: starts once you trust the workspace .mcp.json' : s.state;
    lines.push(`  ${'MCP server'.padEnd(10)} ${s.name} (${s.transport}, ${s.origin}): ${what} [${state}]`);
  }
  for (const p of r.mcpProblems ?? []) lines.push(`  MCP problem: ${p}`);
  const sandbox = sandboxLine(r);
  if (sandbox) lines.push(`  ${'sandbox'.padEnd(10)} ${sandbox}`);
  if (r.ok) lines.push('  ready: a run can reach the model');
  else for (const p of r.problems) lines.push(`  problem: ${p}`);
  return lines;
}

/** The sandbox as the report gives it, one line; `undefined` from a server that does not report it. */
export function sandboxLine(r: DoctorReport): string | undefined {
  const s = r.sandbox;
  if (!s) return undefined;
  if (s.mode === 'off') return 'off: every shell command asks';
  if (s.available === false) return `unavailable: ${s.reason ?? 'unknown'}; every shell command asks`;
  return `${s.mode} (${s.by ?? 'available'}, network ${s.network})`;
}

/**
 * The message for a report with problems: the model and key with the VS Code way to fix them, anything else
 * in the server's words. `undefined` when a run can start.
 */
export function doctorProblemMessage(r: DoctorReport, provider: Provider): string | undefined {
  if (r.ok) return undefined;
  if (r.missing.length > 0) return missingConfigurationMessage(r.missing, provider);
  return `stepwise: ${r.problems.join('; ')}`;
}

export function missingConfigurationMessage(missing: ('model' | 'apiKey')[], provider: Provider): string {
  const parts: string[] = [];
  if (missing.includes('model')) parts.push('no model is configured: set stepwise.model (or MODEL_ID in the environment or a .env file)');
  if (missing.includes('apiKey'))
    parts.push(`no API key for ${provider}: run "Stepwise: Set API Key" (or set ${apiKeyEnvName(provider)} in the environment)`);
  return `stepwise: ${parts.join('; ')}.`;
}

export function missingBinaryMessage(where: string): string {
  return `stepwise: server binary not found at ${where}. Install it with \`cargo install --path server\` or set stepwise.serverPath.`;
}

/** Where the platform-specific package carries the server (`npm run package` puts it there). */
export function bundledServerPath(extensionPath: string, platform: string = process.platform): string {
  return path.join(extensionPath, 'server', platform === 'win32' ? 'stepwise.exe' : 'stepwise');
}

/**
 * The state directory the server saves sessions in (server/src/trust.rs `state_dir`): `STEPWISE_STATE_DIR`,
 * else `$XDG_STATE_HOME/stepwise/sessions`, else `~/.local/state/stepwise/sessions`.
 */
export function stateDir(env: NodeJS.ProcessEnv): string | undefined {
  const v = (k: string) => (env[k] && env[k] !== '' ? env[k] : undefined);
  const dir = v('STEPWISE_STATE_DIR');
  if (dir) return dir;
  const base = v('XDG_STATE_HOME') ?? (v('HOME') ? path.join(v('HOME')!, '.local', 'state') : undefined);
  return base ? path.join(base, 'stepwise', 'sessions') : undefined;
}

/**
 * The file the server saves a folder's session in (server/src/lsp/state.rs `file_for`): the folder's name
 * (characters other than ASCII letters, digits, `-` and `_` as `_`, at most 40) and the FNV-1a hash of its
 * canonical path's bytes. Lets the extension see a saved session without starting the server.
 */
export function sessionFile(dir: string, canonicalFolder: string): string {
  let h = 0xcbf29ce484222325n;
  for (const b of Buffer.from(canonicalFolder, 'utf8')) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  const name = [...path.basename(canonicalFolder)]
    .map((c) => (/^[A-Za-z0-9_-]$/.test(c) ? c : '_'))
    .slice(0, 40)
    .join('');
  return path.join(dir, `${name}-${h.toString(16).padStart(16, '0')}.json`);
}

export interface ServerCommand {
  /** The command to spawn (absolute when found). */
  command: string;
  found: boolean;
  /** Where we looked, for the error message. */
  where: string;
}

/**
 * Finds the server binary: `stepwise.serverPath` when set (`~` expanded, relative to the first workspace
 * folder), else the server packaged in the extension (`bundled`), else `stepwise` on PATH, else
 * `~/.cargo/bin/stepwise`.
 */
export function resolveServerCommand(
  serverPath: unknown,
  env: NodeJS.ProcessEnv,
  exists: (p: string) => boolean,
  opts: { home?: string; baseDir?: string; platform?: string; bundled?: string } = {},
): ServerCommand {
  const home = opts.home ?? env.HOME ?? env.USERPROFILE ?? '';
  const exe = (opts.platform ?? process.platform) === 'win32' ? 'stepwise.exe' : 'stepwise';
  const setting = typeof serverPath === 'string' ? serverPath.trim() : '';
  if (setting) {
    let p = setting;
    if (p === '~' || p.startsWith('~/')) p = path.join(home, p.slice(1));
    if (!path.isAbsolute(p) && p.includes('/') && opts.baseDir) p = path.resolve(opts.baseDir, p);
    if (!p.includes('/') && !p.includes('\\')) {
      const onPath = searchPath(p, env, exists);
      return onPath ? { command: onPath, found: true, where: onPath } : { command: p, found: false, where: `${p} (on PATH)` };
    }
    return { command: p, found: exists(p), where: p };
  }
  if (opts.bundled && exists(opts.bundled)) return { command: opts.bundled, found: true, where: opts.bundled };
  const onPath = searchPath(exe, env, exists);
  if (onPath) return { command: onPath, found: true, where: onPath };
  const cargo = home ? path.join(home, '.cargo', 'bin', exe) : '';
  if (cargo && exists(cargo)) return { command: cargo, found: true, where: cargo };
  return { command: exe, found: false, where: `${exe} (on PATH${cargo ? ` or ${cargo}` : ''})` };
}

export function searchPath(name: string, env: NodeJS.ProcessEnv, exists: (p: string) => boolean): string | undefined {
  const dirs = (env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const d of dirs) {
    const p = path.join(d, name);
    if (exists(p)) return p;
  }
  return undefined;
}

/** Settings whose change needs a new server process (they are read at spawn time). */
export function needsRestart(changed: (key: string) => boolean): boolean {
  return changed('stepwise.serverPath') || changed('stepwise.provider');
}
