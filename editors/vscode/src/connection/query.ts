// The server's `stepwise/query`: what VS Code's language features know, for the agent (docs/protocol.md, "Code
// intelligence"). Diagnostics from `vscode.languages.getDiagnostics`, waiting on `onDidChangeDiagnostics` for the
// document versions the agent wrote (model/settling.ts says when they are settled: a file the editor has not open
// is opened, unshown, so its language servers check it; a language not yet seen publishing is looked at through
// its document symbols); the rest through the `vscode.execute*Provider` commands. stepwise's own
// language client offers none of these features and publishes no diagnostics, so the answers are the other
// extensions'; diagnostics that name stepwise as their source are left out all the same.
import * as vscode from 'vscode';

import * as q from '../model/query';
import { Settling } from '../model/settling';
import type { QueryParams, DiagnosticsAnswer } from '../protocol/generated';

const OWN_SOURCE = 'stepwise';
/** The longest wait an editor grants, whatever the server asks. */
const MAX_WAIT_MS = 60_000;
/** The most documents one question opens (each is checked by its servers). */
const MAX_OPENED = 50;

export class QueryAnswerer implements vscode.Disposable {
  private readonly settling = new Settling();
  /** `uri@version` of the looks under way. */
  private readonly looking = new Set<string>();
  private readonly waiters = new Set<() => void>();
  private readonly subscriptions: vscode.Disposable[];

  constructor() {
    const now = () => Date.now();
    for (const d of vscode.workspace.textDocuments) this.settling.changed(d.uri.toString(), d.version, d.languageId, now());
    this.subscriptions = [
      vscode.workspace.onDidOpenTextDocument((d) => this.settling.changed(d.uri.toString(), d.version, d.languageId, now())),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length === 0) return;
        this.settling.changed(e.document.uri.toString(), e.document.version, e.document.languageId, now());
        this.wakeAll();
      }),
      vscode.workspace.onDidCloseTextDocument((d) => this.settling.forget(d.uri.toString())),
      vscode.languages.onDidChangeDiagnostics((e) => {
        for (const uri of e.uris) this.settling.publishedAt(uri.toString(), documentOf(uri.toString())?.version, now());
        this.wakeAll();
      }),
    ];
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.wakeAll();
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }

  async answer(params: Partial<QueryParams> | undefined): Promise<unknown> {
    const kind = params?.kind;
    if (kind === 'diagnostics') return this.diagnostics(params ?? {});
    if (kind === 'workspaceSymbol') {
      const found = await vscode.commands.executeCommand<vscode.SymbolInformation[]>('vscode.executeWorkspaceSymbolProvider', params?.query ?? '');
      return (found ?? []).map(q.symbolInformation);
    }
    if (!params?.uri) throw new Error(`stepwise/query ${String(kind)}: no uri`);
    const uri = vscode.Uri.parse(params.uri);
    if (kind === 'documentSymbol') {
      const found = await vscode.commands.executeCommand<(vscode.DocumentSymbol | vscode.SymbolInformation)[]>('vscode.executeDocumentSymbolProvider', uri);
      return found ? q.documentSymbols(found) : null;
    }
    if (!params.position) throw new Error(`stepwise/query ${kind}: no position`);
    const pos = new vscode.Position(params.position.line, params.position.character);
    switch (kind) {
      case 'definition':
      case 'references':
      case 'implementation': {
        const command = {
          definition: 'vscode.executeDefinitionProvider',
          references: 'vscode.executeReferenceProvider',
          implementation: 'vscode.executeImplementationProvider',
        }[kind];
        const found = await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>(command, uri, pos);
        return q.locations(found);
      }
      case 'hover':
        return q.hover(await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri, pos));
      case 'rename': {
        const edit = await vscode.commands.executeCommand<vscode.WorkspaceEdit | undefined>(
          'vscode.executeDocumentRenameProvider',
          uri,
          pos,
          params.newName ?? '',
        );
        return q.workspaceEdit(edit?.entries());
      }
      default:
        throw new Error(`stepwise/query: unknown kind ${String(kind)}`);
    }
  }

  /** Each listed document's diagnostics once they are those of its version, or when waitMs ran out. */
  private async diagnostics(params: Partial<QueryParams>): Promise<DiagnosticsAnswer> {
    const documents = params.documents;
    if (!documents) {
      const items = vscode.languages.getDiagnostics().map(([uri, list]) => item(uri.toString(), list, true));
      return { items: items.filter((i) => (i.diagnostics?.length ?? 0) > 0) };
    }
    const waitMs = Math.min(Math.max(params.waitMs ?? 0, 0), MAX_WAIT_MS);
    const deadline = Date.now() + waitMs;
    // VS Code's own spelling of each URI, as its events name them; a document the server names no version of
    // (a file a command changed, not open in the editor) is opened, so its servers check it, and waited on at
    // the version it opened with. One that cannot be opened (gone, binary) is answered unsettled at once.
    // At most MAX_OPENED are opened (a command that rewrote a whole tree does not open it all in the editor).
    let opening = 0;
    const asked = await Promise.all(
      documents.map(async (d) => {
        const key = vscode.Uri.parse(d.uri).toString();
        const open = d.version == null && (documentOf(key) !== undefined || opening++ < MAX_OPENED);
        const version = d.version ?? (open ? await within(this.open(key), deadline - Date.now()) : undefined);
        return { uri: d.uri, key, version };
      }),
    );
    // TypeScript checks only the files shown in tabs and publishes nothing while a file stays clean: its own
    // server is asked (a pull), which answers for the text it has, the document's version or later.
    const pulls = new Map<string, ReturnType<typeof q.tsDiagnostics> | 'failed' | 'asking'>();
    const standing = (d: (typeof asked)[number], now: number) => {
      if (d.version === undefined) return 'given-up';
      // A document with unsaved changes below the version asked for keeps them: VS Code does not take a
      // command's change from the disk into it, so that version will not come.
      const doc = documentOf(d.key);
      if (doc?.isDirty && doc.version < d.version) return 'given-up';
      const pull = pulls.get(d.key);
      if (pull === 'asking') return 'waiting';
      if (pull !== undefined && pull !== 'failed') return 'settled';
      return this.settling.standing(d.key, d.version, now);
    };
    for (;;) {
      const now = Date.now();
      const waiting = asked.filter((d) => standing(d, now) === 'waiting');
      if (waiting.length === 0 || now >= deadline) break;
      for (const d of waiting) {
        const doc = documentOf(d.key);
        const version = d.version as number;
        if (doc && doc.version >= version && tsChecks(doc) && !pulls.has(d.key)) {
          pulls.set(d.key, 'asking');
          void pullTs(doc).then((got) => {
            pulls.set(d.key, got ?? 'failed');
            this.wakeAll();
          });
        } else if (!pulls.has(d.key) && this.settling.needsLook(d.key, version, now)) void this.look(d.key);
      }
      const next = waiting
        .map((d) => this.settling.nextCheck(d.key, d.version, now))
        .filter((n): n is number => n !== undefined);
      await this.wake(Math.min(deadline - now, ...next.map((n) => n + 1)));
    }
    const now = Date.now();
    return {
      items: asked.map((d) => {
        const pull = pulls.get(d.key);
        const settled = standing(d, now) === 'settled';
        if (Array.isArray(pull)) return { uri: d.uri, diagnostics: pull, settled };
        return item(d.uri, vscode.languages.getDiagnostics(vscode.Uri.parse(d.uri)), settled);
      }),
    };
  }

  /** The document's version once it is open in the editor (opened unshown if it was not); undefined: it cannot be. */
  private async open(key: string): Promise<number | undefined> {
    try {
      const doc = documentOf(key) ?? (await vscode.workspace.openTextDocument(vscode.Uri.parse(key)));
      this.settling.changed(key, doc.version, doc.languageId, Date.now());
      return doc.version;
    } catch {
      return undefined;
    }
  }

  /** Asks the document's symbols: the language's server answers once it has the text, its start included. */
  private async look(key: string): Promise<void> {
    const doc = documentOf(key);
    if (!doc) return;
    const version = doc.version;
    const id = `${key}@${version}`;
    if (this.looking.has(id)) return;
    this.looking.add(id);
    let found = false;
    try {
      const symbols = await vscode.commands.executeCommand<unknown[] | undefined>('vscode.executeDocumentSymbolProvider', doc.uri);
      found = (symbols?.length ?? 0) > 0;
    } catch {
      // No server, or one that failed: no sign of a check.
    } finally {
      this.looking.delete(id);
    }
    this.settling.looked(key, version, found, Date.now());
    this.wakeAll();
  }

  /** Resolves at the next diagnostics change, or after `ms`. */
  private wake(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(ms, 0));
      this.waiters.add(done);
    });
  }
}

/** The languages VS Code's TypeScript serves. */
const TS_LANGUAGES = new Set(['typescript', 'typescriptreact', 'javascript', 'javascriptreact']);

/** Whether VS Code's TypeScript checks the document's language (the user may have turned its checks off). */
function tsChecks(doc: vscode.TextDocument): boolean {
  if (!TS_LANGUAGES.has(doc.languageId)) return false;
  const section = doc.languageId.startsWith('javascript') ? 'javascript' : 'typescript';
  return vscode.workspace.getConfiguration(section, doc.uri).get<boolean>('validate.enable', true);
}

/**
 * The document's syntax and type errors from VS Code's TypeScript server (its `typescript.tsserverRequest`
 * command, which lets other extensions ask these), or undefined when it cannot answer (the extension is off,
 * the file is in none of its projects).
 */
async function pullTs(doc: vscode.TextDocument): Promise<ReturnType<typeof q.tsDiagnostics>> {
  try {
    const ask = (command: string) =>
      vscode.commands.executeCommand<unknown>('typescript.tsserverRequest', command, { file: doc.uri, includeLinePosition: false });
    const [syntax, semantic] = await Promise.all([ask('syntacticDiagnosticsSync'), ask('semanticDiagnosticsSync')]);
    const style = vscode.workspace.getConfiguration('typescript', doc.uri).get<boolean>('reportStyleChecksAsWarnings', true);
    const a = q.tsDiagnostics(syntax, style);
    const b = q.tsDiagnostics(semantic, style);
    return a && b ? [...a, ...b] : undefined;
  } catch {
    return undefined;
  }
}

function item(uri: string, list: readonly vscode.Diagnostic[], settled: boolean) {
  return { uri, diagnostics: list.filter((d) => d.source !== OWN_SOURCE).map(q.diagnostic), settled };
}

/** The promise's value, or undefined if it takes more than `ms`. */
function within<T>(p: Promise<T | undefined>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), Math.max(ms, 0))));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

function documentOf(uri: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
}
