// Images for the next prompt: pasted into the input or dropped on it, shown as thumbnails above it (each with
// a button that takes it off) until the prompt is sent; and the images of entries, drawn from their data URL or
// fetched by id (`stepwise.image`, through the extension) when first drawn.
import { IMAGE_TYPES, MAX_IMAGES, type ImageRef } from '../model/images';
import { el } from './dom';

export class Attachments {
  readonly root = el('div', { class: 'attachments', role: 'list', 'aria-label': 'Images to send with the prompt' });
  private items: ImageRef[] = [];

  constructor() {
    this.root.hidden = true;
  }

  /** Takes pasted and dropped images on `target` (the input). */
  listen(target: HTMLElement): void {
    target.addEventListener('paste', (e) => {
      const files = Array.from(e.clipboardData?.items ?? []).filter((i) => i.kind === 'file' && IMAGE_TYPES.includes(i.type)).map((i) => i.getAsFile());
      if (files.length === 0) return;
      e.preventDefault();
      for (const f of files) if (f) this.add(f);
    });
    target.addEventListener('dragover', (e) => {
      if (Array.from(e.dataTransfer?.items ?? []).some((i) => i.kind === 'file')) e.preventDefault();
    });
    target.addEventListener('drop', (e) => {
      const files = Array.from(e.dataTransfer?.files ?? []).filter((f) => IMAGE_TYPES.includes(f.type));
      if (files.length === 0) return;
      e.preventDefault();
      for (const f of files) this.add(f);
    });
  }

  get count(): number {
    return this.items.length;
  }

  /** The images to send, taken off the input. */
  take(): ImageRef[] {
    const out = this.items;
    this.items = [];
    this.draw();
    return out;
  }

  private add(file: File): void {
    const reader = new FileReader();
    reader.onload = () => {
      if (typeof reader.result !== 'string' || this.items.length >= MAX_IMAGES) return;
      this.items.push({ mediaType: file.type, dataUrl: reader.result });
      this.draw();
    };
    reader.readAsDataURL(file);
  }

  private draw(): void {
    this.root.replaceChildren(
      ...this.items.map((image, i) => {
        const remove = el('button', { class: 'remove', title: 'Do not send this image', 'aria-label': 'Remove image' }, '✕');
        remove.addEventListener('click', () => {
          this.items.splice(i, 1);
          this.draw();
        });
        return el('div', { class: 'attachment', role: 'listitem' }, el('img', { src: image.dataUrl, alt: `image ${i + 1} to send` }), remove);
      }),
    );
    this.root.hidden = this.items.length === 0;
  }
}

/** An entry's images as thumbnails; those known only by id are asked for (`fetch`) and filled in later. */
export function imagesRow(images: readonly ImageRef[] | undefined, known: Map<string, string>, fetch: (id: string) => void): HTMLElement | undefined {
  if (!images?.length) return undefined;
  const row = el('div', { class: 'images' });
  for (const image of images) {
    const src = image.dataUrl ?? (image.id ? known.get(image.id) : undefined);
    const img = el('img', { class: 'thumb', alt: image.mediaType, title: image.mediaType, ...(src ? { src } : {}), ...(image.id ? { 'data-image-id': image.id } : {}) });
    if (!src && image.id) fetch(image.id);
    row.append(img);
  }
  return row;
}
