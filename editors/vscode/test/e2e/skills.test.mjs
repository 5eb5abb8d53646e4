// End-to-end test of skills in the Conversation view (issue 49) in real VS Code (code-server): the folder holds
// two skills (`.agents/skills/`); typing `/` in the input offers the view's commands and then the skills, each
// with its description (from the server's `stepwise.skills`); a skill added while the view is open is offered at
// the next `/`; `/rel` Tab completes `/release `, and the prompt sent brings the skill to the model (the server
// loads it into the turn); after a reload the turn shows the prompt as typed.
// Screenshots: skills/*.png (`slash-menu-view.png`: the menu with the descriptions).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  LONG,
  SHORT,
  artifacts,
  onlyConversation,
  page,
  requests,
  runCommand,
  screenshot,
  step,
  useCodeServer,
  viewFrame,
  waitFor,
  waitStatus,
  workspaceDir,
} from './harness.mjs';

const SCRIPT = [{ type: 'turn', text: 'Released 1.2.' }];

useCodeServer(SCRIPT, { artifacts: 'skills', keyViaEnv: true });

function skill(name, description, body) {
  const dir = path.join(workspaceDir, '.agents', 'skills', name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'SKILL.md'), `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`);
  return dir;
}

/** The menu's rows: [label, description]. */
async function rows(menu) {
  return menu.locator('li').evaluateAll((lis) => lis.map((li) => [li.children[0]?.textContent ?? '', li.children[1]?.textContent ?? '']));
}

let frame;
let release;

step('typing / offers the view\'s commands and the folder\'s skills with their descriptions', async () => {
  release = skill('release', 'How we release a version: changelog, tag, build', '# Release\n\nRun `scripts/tag.sh VERSION`.');
  skill('api-conventions', 'Our API conventions: names, errors, pagination', 'Use snake_case.');
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await runCommand('Stepwise: Focus on Conversation View');
  frame = await viewFrame();
  await onlyConversation();
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill('');
  await box.type('/');
  const menu = frame.locator('.suggest');
  const shown = await waitFor('the skills in the menu', () => rows(menu), (r) => r.some(([l]) => l === '/release'), LONG);
  const labels = shown.map(([l]) => l);
  assert.deepEqual(labels.slice(0, 5), ['/compact', '/plan', '/checkpoints', '/rewind', '/review'], 'the view\'s commands first');
  // In the order found: a folder's skills by name.
  assert.deepEqual(shown.slice(5), [
    ['/api-conventions', 'Our API conventions: names, errors, pagination'],
    ['/release', 'How we release a version: changelog, tag, build'],
  ]);
  // Up from the first row wraps to the last, /release: the chosen row shows its whole description.
  await box.press('ArrowUp');
  await menu.locator('li.selected', { hasText: '/release' }).waitFor({ timeout: SHORT });
  await screenshot('slash-menu.png');
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, 'slash-menu-view.png') });
  await box.press('Escape');
  await box.fill('');

  // A skill added while the view is open: offered at the next `/`.
  skill('notes', 'Where meeting notes go', 'Notes go in NOTES.md.');
  await box.type('/');
  await waitFor('the new skill in the menu', () => rows(menu), (r) => r.some(([l]) => l === '/notes'), SHORT);
  await box.press('Escape');
  await box.fill('');
});

step('/rel Tab completes the skill, and the prompt sent brings the skill to the model', async () => {
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.type('/rel');
  const menu = frame.locator('.suggest');
  await waitFor('only the release skill', () => rows(menu), (r) => r.length === 1 && r[0][0] === '/release', SHORT);
  await box.press('Tab');
  assert.equal(await box.inputValue(), '/release ');
  await box.type('1.2');
  await box.press('Enter');
  await waitStatus(/stepwise: idle/, LONG);
  const sent = await waitFor('the request to the model', async () => requests(), (r) => r.length >= 1, SHORT);
  const first = sent[0].body.messages[0].content.map((b) => b.text ?? '');
  assert.deepEqual(first, ['/release 1.2', `<skill name="release" path="${fs.realpathSync(release)}">\n# Release\n\nRun \`scripts/tag.sh VERSION\`.\n</skill>`]);
  await frame.locator('.assistant', { hasText: 'Released 1.2.' }).waitFor({ timeout: SHORT });
});

step('after a reload the turn shows the prompt as typed, not the skill', async () => {
  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  frame = await viewFrame();
  await frame.locator('.turn.user', { hasText: '/release 1.2' }).waitFor({ timeout: LONG });
  await frame.locator('.assistant', { hasText: 'Released 1.2.' }).waitFor({ timeout: LONG });
  assert.equal(await frame.locator('.turn.user, .turn.steer').count(), 1, 'one turn of the user\'s');
  assert.equal(await frame.locator('.entries', { hasText: '<skill' }).count(), 0, 'the skill block is not shown');
  await screenshot('reloaded.png');
});
