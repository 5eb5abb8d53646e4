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
  'reminderRounds',
  'maxRounds',
  'planningStyle',
  'apiKeyEnv',
  'bashTimeoutSecs',
  'requestTimeoutSecs',
] as const;

const ENUMS: Record<string, readonly string[]> = {
  provider: ['anthropic', 'openai'],
  approval: ['ask', 'auto', 'deny'],
  planningStyle: ['todo', 'tasks'],
};
const POSITIVE_INTS = new Set(['reminderRounds', 'maxRounds', 'bashTimeoutSecs', 'requestTimeoutSecs']);

/**
 * The settings the server gets, from the `stepwise` configuration section (a plain object or VS Code's
 * WorkspaceConfiguration). Unset values (undefined, null, '') are left out so the server falls back to
 * its environment (MODEL_ID, ANTHROPIC_BASE_URL, ...); invalid values are left out too.
 */
export function serverSettings(raw: unknown): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  if (!raw || typeof raw !== 'object') return out;
  const src = raw as Record<string, unknown>;
  for (const key of SERVER_KEYS) {
    let value = src[key];
    if (value === undefined || value === null || typeof value === 'function') continue;
    if (typeof value === 'string') {
      value = value.trim();
      if (value === '') continue;
    }
    if (ENUMS[key]) {
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
export function initializationOptions(raw: unknown): Record<string, string | number> {
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

/** Minimal `.env` parser: KEY=VALUE lines, `export ` prefix, quotes, `#` comments. */
export function parseDotenv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) continue;
    let v = m[2].trim();
    if ((v.startsWith('"') && v.endsWith('"') && v.length >= 2) || (v.startsWith("'") && v.endsWith("'") && v.length >= 2)) {
      v = v.slice(1, -1);
    } else {
      const hash = v.indexOf(' #');
      if (hash >= 0) v = v.slice(0, hash).trim();
    }
    out[m[1]] = v;
  }
  return out;
}

export interface ConfigSources {
  settings: Record<string, unknown>;
  env: NodeJS.ProcessEnv;
  /** Parsed `.env` files (of the workspace folder, of the current directory). */
  dotenv: Record<string, string>[];
  secret?: string;
}

function fromSources(name: string, src: ConfigSources): string | undefined {
  const e = src.env[name];
  if (e && e.trim()) return e;
  for (const d of src.dotenv) if (d[name] && d[name].trim()) return d[name];
  return undefined;
}

/** What is missing before a run can reach a model: `[]` when everything is configured. */
export function missingConfiguration(src: ConfigSources): ('model' | 'apiKey')[] {
  const missing: ('model' | 'apiKey')[] = [];
  const settings = serverSettings(src.settings);
  if (!settings.model && !fromSources('MODEL_ID', src)) missing.push('model');
  const providerSetting = settings.provider ?? fromSources('STEPWISE_PROVIDER', src);
  const provider = effectiveProvider(providerSetting, {});
  // OpenAI-compatible local servers (Ollama, llama.cpp) need no key; Anthropic always does.
  if (provider === 'anthropic') {
    const keyEnv = typeof settings.apiKeyEnv === 'string' ? settings.apiKeyEnv : apiKeyEnvName(provider);
    if (!(src.secret && src.secret.trim()) && !fromSources(keyEnv, src)) missing.push('apiKey');
  }
  return missing;
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

export interface ServerCommand {
  /** The command to spawn (absolute when found). */
  command: string;
  found: boolean;
  /** Where we looked, for the error message. */
  where: string;
}

/**
 * Finds the server binary: `stepwise.serverPath` when set (`~` expanded, relative to the first workspace
 * folder), else `stepwise` on PATH, else `~/.cargo/bin/stepwise`.
 */
export function resolveServerCommand(
  serverPath: unknown,
  env: NodeJS.ProcessEnv,
  exists: (p: string) => boolean,
  opts: { home?: string; baseDir?: string; platform?: string } = {},
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
