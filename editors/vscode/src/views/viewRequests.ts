// What the Conversation view's page asks of the extension besides runs and approvals (the `@` and `/` menus:
// completion.ts): a link of the model's text opened, an image of the conversation fetched by id (`stepwise.image`), and
// the images it sends with a prompt, checked.
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';

import { hrefPlace } from '../model/conversation';
import { IMAGE_TYPES, type ImageRef } from '../model/images';
import { Core, errorText, workspaceFolderOf } from '../setup/core';

/** Links in the model's text: web pages open outside, a path of the folder in an editor. */
export async function openLink(ws: string, href: string, worktree?: string): Promise<void> {
  if (/^https?:\/\//i.test(href)) {
    await vscode.env.openExternal(vscode.Uri.parse(href));
    return;
  }
  const folder = workspaceFolderOf(ws);
  const rel = href.replace(/^\.?\//, '').replace(/#.*$/, '');
  if (!folder || !rel || rel.split(/[\\/]/).includes('..')) return;
  // A diagnostic's line opens at its place (`#L3C7`, 1-based).
  const place = hrefPlace(href);
  const at = place ? new vscode.Position(Math.max(place.line - 1, 0), Math.max(place.column - 1, 0)) : undefined;
  const root = worktree ? vscode.Uri.file(worktree) : folder.uri;
  await vscode.window.showTextDocument(vscode.Uri.joinPath(root, rel), { preview: true, ...(at ? { selection: new vscode.Range(at, at) } : {}) });
}

/** An image of the folder's conversation by the id its entry gave, as a data URL; none when it is gone
 * (compacted away, removed after a model refused images). */
export async function fetchImage(core: Core, client: LanguageClient, ws: string, id: string): Promise<string | undefined> {
  if (!id) return undefined;
  try {
    const r = await core.execute(client, 'stepwise.image', [{ workspace: ws, id }]);
    return r?.data && IMAGE_TYPES.includes(r.mediaType) ? `data:${r.mediaType};base64,${r.data}` : undefined;
  } catch (error) {
    core.log(`[stepwise] stepwise.image ${id}: ${errorText(error)}`);
    return undefined;
  }
}

/** The images the page sent with a prompt: data URLs of the types the server takes. */
export function pasted(raw: unknown): ImageRef[] {
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((i): i is ImageRef => !!i && typeof i.dataUrl === 'string' && IMAGE_TYPES.includes(String(i.mediaType)))
    .map((i) => ({ mediaType: String(i.mediaType), dataUrl: String(i.dataUrl) }));
}
