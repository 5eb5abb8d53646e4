// End-to-end test of an MCP server that failed to start, in real VS Code (code-server): with the setting
// stepwise.mcpServers naming a command that does not exist, after the folder's first run the status bar
// warns of it and the plan view shows a warning row with the error.
import assert from 'node:assert/strict';
import { LONG, SHORT, answerInputBox, page, planRows, runCommand, screenshot, step, useCodeServer, waitFor, waitStatus } from './harness.mjs';

const SCRIPT = [
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: 'Look around', status: 'completed' }] } }] },
  { type: 'turn', text: 'Done.' },
];

useCodeServer(SCRIPT, {
  artifacts: 'mcp',
  keyViaEnv: true,
  settings: { 'stepwise.mcpServers': { gone: { command: '/nonexistent/mcp-server' } } },
});

step('a failed MCP server is shown in the status bar and the plan view after the first run', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', 'Look around');
  await waitStatus(/stepwise: idle 1\/1/, LONG);
  await waitStatus(/MCP: gone failed/, LONG);
  await runCommand('Stepwise: Show Plan');
  const rows = await waitFor('the warning row', planRows, (r) => r.some((x) => x.startsWith('warning: MCP server gone (settings) failed: ')), SHORT);
  const row = rows.find((x) => x.startsWith('warning: MCP server gone'));
  assert.match(row, /\/nonexistent\/mcp-server/, `the row carries the error: ${row}`);
  assert.ok(rows.includes('completed: Look around'), `the plan is still shown: ${rows}`);
  await screenshot('mcp-failed.png');
});
