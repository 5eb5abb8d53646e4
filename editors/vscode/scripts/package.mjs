// `npm run package`: builds the release server (cargo build --release -p stepwise) and packages a
// platform-specific .vsix with it inside (server/stepwise), for this machine's platform or --target.
//   node scripts/package.mjs [--target linux-x64] [--out FILE] [--server PATH]
// --server packages an already built binary instead of building one (a darwin .vsix: a server built on a Mac);
// a target for another platform needs it. Windows is not a target (the agent's tool is bash): use WSL.
// Prints the .vsix path last.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ext = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repo = path.resolve(ext, '../..');
const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};

// vsce's target names, less Windows (win32-*) until stepwise runs there.
const TARGETS = ['linux-x64', 'linux-arm64', 'linux-armhf', 'alpine-x64', 'alpine-arm64', 'darwin-x64', 'darwin-arm64'];

function hostTarget() {
  const arch = { x64: 'x64', arm64: 'arm64', arm: 'armhf' }[process.arch];
  if (!arch) throw new Error(`no VS Code target for the architecture ${process.arch}`);
  const musl = process.platform === 'linux' && !process.report?.getReport()?.header?.glibcVersionRuntime;
  return `${musl ? 'alpine' : process.platform}-${arch}`;
}

function fail(message) {
  console.error(`package.mjs: ${message}`);
  process.exit(2);
}

const target = arg('--target') ?? (process.platform === 'win32' ? 'win32' : hostTarget());
if (target.startsWith('win32')) {
  fail('Windows is not supported yet: use WSL, and the linux-x64 package inside it');
}
if (!TARGETS.includes(target)) fail(`unknown target ${target}; one of ${TARGETS.join(', ')}`);
const exe = 'stepwise';
let server = arg('--server');
if (!server && target !== hostTarget()) {
  fail(`cargo here builds a ${hostTarget()} server; for ${target} build it there and pass --server PATH`);
}
if (!server) {
  console.log('==> cargo build --release -p stepwise');
  execFileSync('cargo', ['build', '--release', '-p', 'stepwise'], { cwd: repo, stdio: 'inherit' });
  const targetDir = process.env.CARGO_TARGET_DIR ? path.resolve(repo, process.env.CARGO_TARGET_DIR) : path.join(repo, 'target');
  server = path.join(targetDir, 'release', exe);
}
fs.rmSync(path.join(ext, 'server'), { recursive: true, force: true });
fs.mkdirSync(path.join(ext, 'server'));
const bundled = path.join(ext, 'server', exe);
fs.copyFileSync(server, bundled);
fs.chmodSync(bundled, 0o755);

const out = arg('--out') ?? path.join(ext, `stepwise-${target}.vsix`);
console.log(`==> vsce package --target ${target} (server: ${path.relative(repo, server)})`);
const vsce = path.join(ext, 'node_modules', '.bin', 'vsce');
// README's screenshots stay relative: VS Code shows them from the package (no public repository to point at).
execFileSync(vsce, ['package', '--no-dependencies', '--no-rewrite-relative-links', '--target', target, '--out', out], { cwd: ext, stdio: 'inherit' });
console.log(out);
