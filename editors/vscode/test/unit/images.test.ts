// Images in the Conversation view's model: what a prompt sends (`stepwise.run`'s `images`), what an entry from
// the server shows, and a prompt of images alone kept as the user's turn.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ConversationLog } from '../../src/model/conversation';
import { imagesOf, runImages, splitDataUrl } from '../../src/model/images';

test('a pasted image is sent as its media type and base64', () => {
  assert.deepEqual(splitDataUrl('data:image/png;base64,iVBORw0K'), { mediaType: 'image/png', data: 'iVBORw0K' });
  assert.equal(splitDataUrl('https://example.com/a.png'), undefined);
  assert.equal(splitDataUrl('data:image/png,raw'), undefined, 'only base64 data URLs');
  const images = [
    { mediaType: 'image/png', dataUrl: 'data:image/png;base64,AAA=' },
    { mediaType: 'image/png', id: 'known-by-id' },
    { mediaType: 'image/gif', dataUrl: 'data:image/gif;base64,R0lG' },
  ];
  assert.deepEqual(runImages(images), [
    { mediaType: 'image/png', data: 'AAA=' },
    { mediaType: 'image/gif', data: 'R0lG' },
  ]);
  assert.deepEqual(runImages(undefined), []);
});

test('an entry\'s images from the server: media type and id, anything else dropped', () => {
  assert.deepEqual(imagesOf([{ mediaType: 'image/png', id: 'a' }, { id: 'b' }, { mediaType: 'image/png', id: '' }, null, 'x']), [{ mediaType: 'image/png', id: 'a' }]);
  assert.equal(imagesOf([]), undefined);
  assert.equal(imagesOf('nope'), undefined);
});

test('a prompt with images, or of images alone, is the user\'s turn with them', () => {
  const log = new ConversationLog();
  const shot = { mediaType: 'image/png', dataUrl: 'data:image/png;base64,AAA=' };
  assert.equal(log.apply({ type: 'user', kind: 'user', text: 'look', images: [shot] }), 0);
  assert.equal(log.apply({ type: 'user', kind: 'user', text: '', images: [shot] }), 1);
  assert.equal(log.apply({ type: 'user', kind: 'user', text: '' }), undefined, 'nothing at all is no turn');
  assert.deepEqual(log.entries, [
    { kind: 'user', text: 'look', runId: undefined, images: [shot] },
    { kind: 'user', text: '', runId: undefined, images: [shot] },
  ]);
});
