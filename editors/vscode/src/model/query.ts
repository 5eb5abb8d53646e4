// Answers to the server's `stepwise/query` (docs/protocol.md, "Code intelligence"), as pure logic: VS Code's
// objects (read through the structural types below, so tests pass plain objects) turned into LSP JSON. When a
// document's diagnostics are settled for the version the agent wrote: settling.ts.

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

/** A diagnostic as TypeScript's server gives it (`syntacticDiagnosticsSync` / `semanticDiagnosticsSync`). */
export interface TsDiagnosticLike {
  /** 1-based line and offset (UTF-16). */
  start: { line: number; offset: number };
  end: { line: number; offset: number };
  text: string;
  code?: number;
  category?: string;
  source?: string;
}

const TS_SEVERITY: Record<string, number> = { error: 1, warning: 2, message: 3, suggestion: 4 };

/** Style checks (unused names, unreachable code, fallthrough, missing returns) VS Code's TypeScript shows as warnings. */
const TS_STYLE_CHECKS = new Set([6133, 6196, 6138, 6192, 7027, 7028, 7029, 7030]);

/**
 * TypeScript's server's diagnostic as an LSP Diagnostic, as VS Code's TypeScript shows it (`styleAsWarnings`:
 * its setting `typescript.reportStyleChecksAsWarnings`, on by default).
 */
export function tsDiagnostic(d: TsDiagnosticLike, styleAsWarnings = true) {
  const pos = (p: { line: number; offset: number }) => ({ line: Math.max(p.line - 1, 0), character: Math.max(p.offset - 1, 0) });
  const category = d.category ?? 'error';
  const style = styleAsWarnings && category === 'error' && d.code !== undefined && TS_STYLE_CHECKS.has(d.code);
  return {
    range: { start: pos(d.start), end: pos(d.end) },
    severity: style ? 2 : (TS_SEVERITY[category] ?? 1),
    message: d.text,
    source: d.source ?? 'ts',
    ...(d.code !== undefined ? { code: d.code } : {}),
  };
}

/** The diagnostics of a TypeScript server's answer (`{type: 'response', body: [...]}`), or undefined if it gave none. */
export function tsDiagnostics(answer: unknown, styleAsWarnings = true): ReturnType<typeof tsDiagnostic>[] | undefined {
  const body = (answer as { type?: string; success?: boolean; body?: unknown } | undefined | null)?.body;
  if (!Array.isArray(body)) return undefined;
  return (body as TsDiagnosticLike[])
    .filter((d) => d && d.start && d.end && typeof d.text === 'string')
    .map((d) => tsDiagnostic(d, styleAsWarnings));
}
