// Answers to the server's `stepwise/query` (docs/protocol.md, "Code intelligence"), as pure logic: VS Code's
// objects (read through the structural types below, so tests pass plain objects) turned into LSP JSON, and when
// a document's diagnostics are settled for the version the agent wrote.

/** What VS Code's Position / Range look like. */
export interface Pos {
  line: number;
  character: number;
}
export interface Rng {
  start: Pos;
  end: Pos;
}
interface UriLike {
  toString(): string;
}
export interface LocationLike {
  uri: UriLike;
  range: Rng;
}
export interface LocationLinkLike {
  targetUri: UriLike;
  targetRange: Rng;
  targetSelectionRange?: Rng;
}
export interface DiagnosticLike {
  range: Rng;
  message: string;
  /** vscode.DiagnosticSeverity: Error 0, Warning 1, Information 2, Hint 3. */
  severity: number;
  source?: string;
  code?: string | number | { value: string | number };
}
export interface HoverLike {
  contents: (string | { value: string; language?: string })[];
  range?: Rng;
}
export interface DocumentSymbolLike {
  name: string;
  detail?: string;
  /** vscode.SymbolKind: 0-based (File 0); LSP's is 1-based. */
  kind: number;
  range: Rng;
  selectionRange: Rng;
  children?: DocumentSymbolLike[];
}
export interface SymbolInformationLike {
  name: string;
  kind: number;
  containerName?: string;
  location: LocationLike;
}
export interface TextEditLike {
  range: Rng;
  newText: string;
}

export const range = (r: Rng) => ({
  start: { line: r.start.line, character: r.start.character },
  end: { line: r.end.line, character: r.end.character },
});

/** A Location or a LocationLink (its target) as an LSP Location. */
export function location(l: LocationLike | LocationLinkLike) {
  if ('targetUri' in l) return { uri: l.targetUri.toString(), range: range(l.targetSelectionRange ?? l.targetRange) };
  return { uri: l.uri.toString(), range: range(l.range) };
}

export function locations(list: readonly (LocationLike | LocationLinkLike)[] | undefined | null) {
  return (list ?? []).map(location);
}

export function diagnostic(d: DiagnosticLike) {
  const code = typeof d.code === 'object' && d.code !== null ? d.code.value : d.code;
  return {
    range: range(d.range),
    severity: Math.min(Math.max(d.severity, 0), 3) + 1,
    message: d.message,
    ...(d.source ? { source: d.source } : {}),
    ...(code !== undefined ? { code } : {}),
  };
}

/** The hovers of every provider as one LSP Hover (markdown), or null when none says anything. */
export function hover(list: readonly HoverLike[] | undefined | null) {
  const parts: string[] = [];
  let first: Rng | undefined;
  for (const h of list ?? []) {
    for (const c of h.contents) {
      const text = typeof c === 'string' ? c : c.language ? '```' + c.language + '\n' + c.value + '\n```' : c.value;
      if (text.trim()) parts.push(text);
    }
    first ??= h.range;
  }
  if (parts.length === 0) return null;
  return { contents: { kind: 'markdown', value: parts.join('\n\n---\n\n') }, ...(first ? { range: range(first) } : {}) };
}

export interface LspDocumentSymbol {
  name: string;
  detail?: string;
  kind: number;
  range: ReturnType<typeof range>;
  selectionRange: ReturnType<typeof range>;
  children?: LspDocumentSymbol[];
}

/** DocumentSymbol[] (or SymbolInformation[], which some providers answer) as LSP JSON. */
export function documentSymbols(list: readonly (DocumentSymbolLike | SymbolInformationLike)[] | undefined | null) {
  const one = (s: DocumentSymbolLike | SymbolInformationLike): LspDocumentSymbol | ReturnType<typeof symbolInformation> => {
    if ('location' in s) return symbolInformation(s);
    return {
      name: s.name,
      ...(s.detail ? { detail: s.detail } : {}),
      kind: s.kind + 1,
      range: range(s.range),
      selectionRange: range(s.selectionRange),
      ...(s.children && s.children.length > 0 ? { children: s.children.map((c) => one(c) as LspDocumentSymbol) } : {}),
    };
  };
  return (list ?? []).map(one);
}

export function symbolInformation(s: SymbolInformationLike) {
  return {
    name: s.name,
    kind: s.kind + 1,
    location: location(s.location),
    ...(s.containerName ? { containerName: s.containerName } : {}),
  };
}

/** A vscode.WorkspaceEdit's text edits (its `entries()`) as an LSP WorkspaceEdit, or null when it has none. */
export function workspaceEdit(entries: readonly [UriLike, readonly TextEditLike[]][] | undefined | null) {
  const changes: Record<string, { range: ReturnType<typeof range>; newText: string }[]> = {};
  for (const [uri, edits] of entries ?? []) {
    const list = (changes[uri.toString()] ??= []);
    for (const e of edits) list.push({ range: range(e.range), newText: e.newText });
  }
  return Object.keys(changes).length > 0 ? { changes } : null;
}

/**
 * When a document's diagnostics are those of a version. A language server that publishes says so by a change of
 * the document's diagnostics after it reached the version; but VS Code (and TypeScript) fire no change when the
 * diagnostics stay the same, so a document whose server has been seen publishing for its language, and has been
 * at the version for well past that server's usual time (twice its slowest recent one, at least `floorMs`) with
 * no change, is settled too. A language never seen publishing settles only by a change: its server may still be
 * starting (TypeScript's first analysis takes seconds), and settling it early would read as clean. Only plain text,
 * which no server of VS Code's own checks, settles after `unknownQuietMs` unchanged, so editing a text file does
 * not hold the round for the whole wait.
 */
/** Languages no language server of VS Code's own checks. */
const UNCHECKED_LANGUAGES = new Set(['plaintext', 'log']);

export class Settling {
  /** uri -> the document's version when its diagnostics last changed (-1: the document was not open). */
  private readonly published = new Map<string, number>();
  /** uri -> when the document reached its current version, and its language. */
  private readonly reached = new Map<string, { version: number; at: number; language: string }>();
  /** language -> recent times from a version to its diagnostics (ms), newest last. */
  private readonly latencies = new Map<string, number[]>();

  constructor(
    private readonly floorMs = 300,
    private readonly unknownQuietMs = 2000,
  ) {}

  /** How long a document of `language` must stay unchanged, with no diagnostics change, to be settled (never: undefined). */
  private quietMs(language: string): number | undefined {
    const seen = this.latencies.get(language);
    if (!seen || seen.length === 0) return UNCHECKED_LANGUAGES.has(language) ? this.unknownQuietMs : undefined;
    return Math.max(this.floorMs, 2 * Math.max(...seen));
  }

  /** A document changed to `version` (or was opened) at `now`. */
  changed(uri: string, version: number, language: string, now: number): void {
    this.reached.set(uri, { version, at: now, language });
  }

  /** The document's diagnostics changed at `now`, while it was at `version` (undefined: not open). */
  publishedAt(uri: string, version: number | undefined, now: number): void {
    this.published.set(uri, version ?? -1);
    const r = this.reached.get(uri);
    if (r && version !== undefined && r.version === version) {
      const list = this.latencies.get(r.language) ?? [];
      list.push(now - r.at);
      if (list.length > 8) list.shift();
      this.latencies.set(r.language, list);
    }
  }

  /** Whether the document's diagnostics are those of `version` (undefined: of whatever text it has). */
  settled(uri: string, version: number | undefined, now: number): boolean {
    const p = this.published.get(uri);
    if (version === undefined) return p !== undefined;
    if (p !== undefined && p >= version) return true;
    const r = this.reached.get(uri);
    if (!r || r.version < version) return false;
    const quiet = this.quietMs(r.language);
    return quiet !== undefined && now - r.at >= quiet;
  }

  /** When `settled` may next turn true without an event (the quiet rule), in ms from `now`; undefined: never. */
  nextCheck(uri: string, version: number | undefined, now: number): number | undefined {
    const r = this.reached.get(uri);
    const quiet = r && this.quietMs(r.language);
    if (version === undefined || !r || r.version < version || quiet === undefined) return undefined;
    return Math.max(0, r.at + quiet - now);
  }

  forget(uri: string): void {
    this.reached.delete(uri);
    this.published.delete(uri);
  }
}
