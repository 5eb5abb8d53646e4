import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { failureLine, mcpNodes, mcpServers, mcpStatus } from '../../src/model/mcp';
import { Folders } from '../../src/model/folders';
import { statusBarModel } from '../../src/model/status';

const WS = 'file:///w/demo';
const SERVERS = mcpServers({
  workspace: WS,
  servers: [
    { name: 'py', origin: 'settings', state: 'running', tools: 3 },
    { name: 'gone', origin: 'settings', state: 'failed', tools: 0, error: 'could not start /nonexistent/mcp-server: No such file or directory (os error 2)' },
    { name: 'repo', origin: 'workspace', state: 'failed', tools: 0, error: 'not trusted' },
  ],
});

test('a malformed stepwise/mcp payload shows nothing', () => {
  assert.deepEqual(mcpServers(undefined), []);
  assert.deepEqual(mcpServers({ workspace: WS, servers: 'x' as never }), []);
  assert.deepEqual(mcpServers({ workspace: WS, servers: [null as never, { state: 'failed' } as never] }), []);
});

test('the status bar warns of failed MCP servers, each with its error in the tooltip', () => {
  assert.equal(mcpStatus(SERVERS.slice(0, 1)), undefined, 'nothing when all run');
  const m = statusBarModel({ workspace: WS, state: 'idle', reason: 'end_turn' }, undefined, undefined, undefined, undefined, SERVERS);
  assert.equal(m.text, '$(checklist) stepwise: idle · $(warning) MCP: gone, repo failed');
  assert.equal(m.severity, 'warning');
  const lines = m.tooltip.split('\n');
  assert.ok(lines.includes('MCP server gone (settings) failed: could not start /nonexistent/mcp-server: No such file or directory (os error 2)'), m.tooltip);
  assert.ok(lines.includes('MCP server repo (workspace) failed: not trusted'), m.tooltip);
  assert.ok(!m.tooltip.includes('py'), 'a running server is not a warning');
  // A failed run stays an error; many failures are counted.
  const many = [...SERVERS, { name: 'x', state: 'failed' }];
  const err = statusBarModel({ workspace: WS, state: 'idle', reason: 'error' }, undefined, undefined, undefined, undefined, many);
  assert.equal(err.severity, 'error');
  assert.match(err.text, / · \$\(warning\) MCP: 3 servers failed$/);
  assert.equal(failureLine({ name: 'x', state: 'failed' }), 'MCP server x failed');
});

test('the plan view shows a warning row per failed server, above the plan', () => {
  const nodes = mcpNodes(WS, SERVERS);
  assert.deepEqual(nodes.map((n) => [n.kind, n.label, n.description, n.contextValue]), [
    ['warning', 'MCP server gone failed', 'could not start /nonexistent/mcp-server: No such file or directory (os error 2)', 'stepwise.mcpFailed'],
    ['warning', 'MCP server repo failed', 'not trusted', 'stepwise.mcpFailed'],
  ]);
  assert.equal(nodes[1].accessibility, 'warning: MCP server repo (workspace) failed: not trusted');
  assert.equal(mcpNodes(WS, SERVERS, 'demo')[0].label, 'MCP server gone failed in demo');

  const folders = new Folders();
  folders.updatePlan({ workspace: WS, items: [{ id: 1, text: 'a', status: 'pending' }] });
  folders.ensure(WS).mcp = SERVERS;
  const roots = folders.roots([{ uri: WS, name: 'demo' }]);
  assert.deepEqual(roots.map((n) => n.kind), ['warning', 'warning', 'item']);
  // A new server forgets them: its servers start again at the next run.
  folders.serverStarted();
  assert.deepEqual(folders.roots([{ uri: WS, name: 'demo' }]).map((n) => n.kind), ['item']);
});
