// Images in the conversation, as the view keeps them: a prompt's (pasted or dropped into the input, sent with
// `stepwise.run`'s `images`) and a tool's (`read_file` of an image). An image the server told of by id
// (`stepwise.conversation`) is fetched with `stepwise.image` when it is drawn. Pure logic: no `vscode`, no DOM.

/** An image of an entry: its data URL where the view has it, else the id `stepwise.image` takes. */
export interface ImageRef {
  mediaType: string;
  id?: string;
  dataUrl?: string;
}

/** What the server takes (it checks the bytes, and the limits: docs/images.md). */
export const IMAGE_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
/** Images one prompt may carry (the server's limit). */
export const MAX_IMAGES = 20;

/** An entry's `images` from the server (anything the view cannot show is dropped). */
export function imagesOf(raw: unknown): ImageRef[] | undefined {
  if (!Array.isArray(raw)) return undefined;
  const out = raw
    .filter((i): i is Record<string, unknown> => !!i && typeof i === 'object')
    .filter((i) => typeof i.mediaType === 'string' && typeof i.id === 'string' && i.id !== '')
    .map((i) => ({ mediaType: String(i.mediaType), id: String(i.id) }));
  return out.length > 0 ? out : undefined;
}

/** `data:<type>;base64,<data>` in its parts; `undefined` for anything else. */
export function splitDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return m ? { mediaType: m[1], data: m[2] } : undefined;
}

/** A prompt's images as `stepwise.run` takes them. */
export function runImages(images: readonly ImageRef[] | undefined): { mediaType: string; data: string }[] {
  return (images ?? []).map((i) => (i.dataUrl ? splitDataUrl(i.dataUrl) : undefined)).filter((i): i is { mediaType: string; data: string } => !!i);
}
