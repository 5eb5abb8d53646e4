// The extension's rooms and their order: each folder of src/ imports only from the folders below it (and its
// own), so the layers read top-down: extension.ts wires them; commands/ (what the user runs); views/ (trees,
// status bar, the Conversation view); connection/ (the language client: starting the server, its
// notifications); setup/ (finding the server, the key, settings, the shared state); model/ (pure logic, no
// `vscode`); protocol/ (the wire types, generated from the server's schema). webview/ is the Conversation
// view's page, bundled apart: model/ and protocol/ only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

const SRC = path.resolve(__dirname, '../../../src');
const ORDER = ['protocol', 'model', 'setup', 'connection', 'views', 'commands', ''];

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

function room(file: string): string {
  const rel = path.relative(SRC, path.dirname(file));
  return rel.split(path.sep)[0];
}

test('each folder imports only from the folders below it', () => {
  const wrong: string[] = [];
  const all = files(SRC);
  assert.ok(all.length > 30, `found the sources in ${SRC}`);
  for (const file of all) {
    const from = room(file);
    for (const m of fs.readFileSync(file, 'utf8').matchAll(/from '(\.[^']*)'|import\('(\.[^']*)'\)/g)) {
      const to = room(path.resolve(path.dirname(file), m[1] ?? m[2]));
      const below = ORDER.includes(to) && ORDER.indexOf(to) <= ORDER.indexOf(from);
      const ok = from === 'webview' ? ['protocol', 'model', 'webview'].includes(to) : below;
      if (!ok) wrong.push(`${path.relative(SRC, file)} -> ${m[1] ?? m[2]}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('model/ is pure logic: no vscode import', () => {
  const impure = files(path.join(SRC, 'model')).filter((f) => /from 'vscode'|require\('vscode'\)/.test(fs.readFileSync(f, 'utf8')));
  assert.deepEqual(impure, []);
});
