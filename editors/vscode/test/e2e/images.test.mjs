// End-to-end test of images in the Conversation view, in real VS Code (code-server): two screenshots pasted
// into the input show as thumbnails above it, one is taken off with its ✕, and the prompt sent with the other
// reaches the model as an image block after its text (the mock's recorded request); the sent turn shows the
// image in the conversation; after a reload the view shows it again, fetched from the server by id. An image
// dropped on the input is attached too. Screenshots: images/*.png.
import assert from 'node:assert/strict';
import path from 'node:path';
import zlib from 'node:zlib';
import { LONG, SHORT, artifacts, onlyConversation, page, requests, runCommand, screenshot, step, useCodeServer, viewFrame, waitFor, waitStatus } from './harness.mjs';

const TASK = 'Why is the Save button cut off?';
const SCRIPT = [
  { type: 'turn', text: 'The **Save** button overflows its toolbar: the toolbar has a fixed width.' },
  { type: 'turn', text: 'That one is a plain grey square.' },
];

useCodeServer(SCRIPT, { artifacts: 'images', keyViaEnv: true });

/** A PNG of `w` x `h` whose pixel colour `paint(x, y)` gives (an RGB triple). */
function png(w, h, paint) {
  const rows = [];
  for (let y = 0; y < h; y++) {
    const row = Buffer.alloc(1 + 3 * w);
    for (let x = 0; x < w; x++) Buffer.from(paint(x, y)).copy(row, 1 + 3 * x);
    rows.push(row);
  }
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(Buffer.concat(rows))), chunk('IEND', Buffer.alloc(0))]);
}

// A toolbar whose blue Save button runs off its right edge; and a grey square.
const TOOLBAR = png(240, 90, (x, y) => (y < 20 ? [60, 60, 70] : x > 150 && y > 35 && y < 65 ? [0, 110, 220] : x > 200 ? [255, 255, 255] : [235, 235, 240]));
const GREY = png(64, 64, () => [128, 128, 128]);
const b64 = (buf) => buf.toString('base64');

/** Pastes `images` (PNG buffers) into the input, as a screenshot tool's Ctrl+V does. */
async function paste(frame, images) {
  await frame.locator('textarea[aria-label="Message for the agent"]').evaluate((box, list) => {
    const dt = new DataTransfer();
    list.forEach((data, i) => dt.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], `shot-${i}.png`, { type: 'image/png' })));
    box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  }, images.map(b64));
}

async function screenshots(name) {
  await screenshot(`${name}.png`);
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, `${name}-view.png`) });
}

let frame;

step('pasted images show as thumbnails; one is taken off; the prompt reaches the model with the other', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await runCommand('Stepwise: Focus on Conversation View');
  frame = await viewFrame();
  await onlyConversation();
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill(TASK);
  await paste(frame, [TOOLBAR, GREY]);
  const thumbs = frame.locator('.attachments .attachment img');
  await waitFor('two thumbnails', () => thumbs.count(), (n) => n === 2, SHORT);
  assert.equal(await thumbs.first().getAttribute('src'), `data:image/png;base64,${b64(TOOLBAR)}`);
  await screenshots('pasted');
  // The grey one is not meant to go: its ✕ takes it off.
  await frame.locator('.attachments .attachment').nth(1).locator('button.remove').click();
  await waitFor('one thumbnail', () => thumbs.count(), (n) => n === 1, SHORT);
  await box.press('Enter');
  // The sent turn shows its text and its image; the input has none left.
  const turn = frame.locator('.turn.user', { hasText: TASK });
  await turn.waitFor({ timeout: LONG });
  await turn.locator('.images img.thumb').waitFor({ timeout: SHORT });
  assert.equal(await turn.locator('.images img.thumb').getAttribute('src'), `data:image/png;base64,${b64(TOOLBAR)}`);
  assert.equal(await frame.locator('.attachments').isHidden(), true, 'the input has no image left');
  await frame.locator('.assistant strong', { hasText: 'Save' }).waitFor({ timeout: LONG });
  await waitStatus(/stepwise: idle/, LONG);
  // What the model was sent: the text, then the one image.
  await waitFor('the recorded request', () => requests().length, (n) => n >= 1, SHORT);
  assert.deepEqual(requests()[0].body.messages[0].content.map((b) => ({ ...b, cache_control: undefined })), [
    { type: 'text', text: TASK, cache_control: undefined },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64(TOOLBAR) }, cache_control: undefined },
  ]);
  await screenshots('sent');
});

step('after a reload the conversation shows the image again, fetched from the server', async () => {
  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  frame = await viewFrame();
  const img = frame.locator('.turn.user', { hasText: TASK }).locator('.images img.thumb');
  await img.waitFor({ timeout: LONG });
  await waitFor('the image fetched by id', () => img.getAttribute('src'), (src) => src === `data:image/png;base64,${b64(TOOLBAR)}`, LONG);
  assert.ok(await img.getAttribute('data-image-id'), 'known by id after the reload');
  await screenshots('reloaded');
});

step('an image dropped on the input goes with a prompt of images alone', async () => {
  await frame.locator('.input').evaluate((input, data) => {
    const dt = new DataTransfer();
    dt.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], 'grey.png', { type: 'image/png' }));
    input.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, b64(GREY));
  await frame.locator('.attachments .attachment img').waitFor({ timeout: SHORT });
  await frame.locator('textarea[aria-label="Message for the agent"]').press('Enter');
  await frame.locator('.assistant', { hasText: 'plain grey square' }).waitFor({ timeout: LONG });
  await waitFor('the second request', () => requests().length, (n) => n >= 2, SHORT);
  const last = requests()[1].body.messages.at(-1);
  assert.equal(last.role, 'user');
  assert.deepEqual(last.content.at(-1).source, { type: 'base64', media_type: 'image/png', data: b64(GREY) });
  assert.ok(!last.content.some((b) => b.type === 'text' && b.text === ''), 'no empty text block');
  await screenshots('dropped');
});
