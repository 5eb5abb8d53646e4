// End-to-end test of the Stepwise sidebar in a new profile, as a new user first sees it: the Conversation view
// takes most of the sidebar's height, Plan, Transcript and Changes are collapsed below it; after a run their
// headers say what they hold ("Plan 1/1", "Transcript 1 run, 4 rounds", "Changes 1 file"), one click opens one,
// and the layout the user made is kept after a reload (nothing re-arranges the views at start).
// Screenshots: layout/*.png (layout/after-run-view.png is the README's media/screenshots/layout.png).
import assert from 'node:assert/strict';
import path from 'node:path';
import { LONG, SHORT, artifacts, page, screenshot, step, useCodeServer, viewFrame, waitFor, waitStatus } from './harness.mjs';

const TASK = 'Make the greeting louder';
const LOUD = '// A LOUD module for the stepwise end-to-end test.\nfunction greet(name) {\n  return `HELLO, ${name}!!`;\n}\n\nmodule.exports = { greet };\n';
const SCRIPT = [
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: TASK, status: 'in_progress' }] } }] },
  { type: 'turn', tool_calls: [{ name: 'write_file', input: { path: 'greet.js', content: LOUD } }] },
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: TASK, status: 'completed' }] } }] },
  { type: 'turn', text: 'Louder now.' },
];

useCodeServer(SCRIPT, { artifacts: 'layout', keyViaEnv: true });

const VIEWS = ['Conversation', 'Plan', 'Transcript', 'Changes'];

/** The sidebar's pane of the view `name` and its header. */
function pane(name) {
  const title = { hasText: new RegExp(`^\\s*${name}`, 'i') };
  const header = page.locator('.part.sidebar .pane-header', title).first();
  return { header, pane: page.locator('.part.sidebar .pane', { has: page.locator('.pane-header', title) }).first() };
}

/** Each view: whether it is open, its header's text and its height in pixels. */
async function layout() {
  const out = {};
  for (const name of VIEWS) {
    const { header, pane: p } = pane(name);
    out[name] = {
      expanded: (await header.getAttribute('aria-expanded')) === 'true',
      header: ((await header.locator('.title').textContent()) ?? '').trim(),
      height: (await p.boundingBox())?.height ?? 0,
    };
  }
  return out;
}

async function sidebarHeight() {
  return (await page.locator('.part.sidebar').boundingBox())?.height ?? 0;
}

async function screenshots(name) {
  await screenshot(`${name}.png`);
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, `${name}-view.png`) });
}

step('in a new profile the Conversation view has most of the sidebar; the other views wait collapsed', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  // As a new user: the Stepwise icon in the activity bar.
  const icon = page.locator('.part.activitybar [aria-label^="Stepwise"]').first();
  await icon.waitFor({ timeout: LONG });
  await icon.click();
  await viewFrame();
  const views = await waitFor('the four views', layout, (l) => VIEWS.every((v) => l[v].header), SHORT);
  assert.deepEqual(
    VIEWS.map((v) => views[v].expanded),
    [true, false, false, false],
    `only the Conversation view is open: ${JSON.stringify(views)}`,
  );
  const whole = await sidebarHeight();
  assert.ok(views.Conversation.height > 0.7 * whole, `the conversation has ${views.Conversation.height} of ${whole} px`);
  await screenshots('new-profile');
});

step('after a run the collapsed headers say what the views hold, and one click opens one', async () => {
  const frame = await viewFrame();
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill(TASK);
  await box.press('Enter');
  await waitStatus(/stepwise: idle 1\/1/, LONG);
  const views = await waitFor(
    'the counts in the headers',
    layout,
    (l) => l.Plan.header === 'Plan 1/1' && /^Transcript 1 run, \d+ rounds$/.test(l.Transcript.header) && l.Changes.header === 'Changes 1 file',
    LONG,
  );
  assert.deepEqual(VIEWS.map((v) => views[v].expanded), [true, false, false, false], 'the run opened no view');
  await screenshots('after-run');
  // One click on the header opens the plan, with its item.
  await pane('Plan').header.click();
  await waitFor('the plan open', () => pane('Plan').pane.locator('.monaco-list-row').allTextContents(), (rows) => rows.some((r) => r.includes(TASK)), SHORT);
  await screenshots('plan-open');
});

step('the layout the user made is kept after a reload', async () => {
  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await viewFrame();
  const views = await waitFor('the views back', layout, (l) => VIEWS.every((v) => l[v].header), LONG);
  assert.deepEqual(VIEWS.map((v) => views[v].expanded), [true, true, false, false], `the plan stays open: ${JSON.stringify(views)}`);
});
