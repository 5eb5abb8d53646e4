// The server's `workspace/applyEdit`, applied as the language client applies it, then each document it changed
// that no tab shows saved: a file the user does not have open (VS Code opened it to apply the edit, or unshown to
// answer `stepwise/query` for its errors from before the agent's change) gets the agent's change on disk, and no
// hidden document stays dirty, as Neovim's plugin writes the buffers it loaded for the agent. A document shown in
// a tab keeps the edit unsaved, in its undo history, as the user's own edits are (saved before a shell command).
import * as vscode from 'vscode';
import type { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, LanguageClient } from 'vscode-languageclient/node';

/** The language client's own handler (public in its JavaScript, not in its types). */
type Applier = { handleApplyWorkspaceEdit(params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult> };

export async function applyEdit(client: LanguageClient, params: ApplyWorkspaceEditParams, log: (line: string) => void): Promise<ApplyWorkspaceEditResult> {
  const edited = editedUris(params);
  const dirtyBefore = new Set(vscode.workspace.textDocuments.filter((d) => d.isDirty).map((d) => d.uri.toString()));
  const result = await (client as unknown as Applier).handleApplyWorkspaceEdit(params);
  if (!result.applied) return result;
  const shown = shownUris();
  for (const doc of vscode.workspace.textDocuments) {
    const key = doc.uri.toString();
    if (!edited.has(key) || !doc.isDirty || dirtyBefore.has(key) || shown.has(key)) continue;
    try {
      if (!(await doc.save())) log(`[stepwise] could not save ${key}, which no tab shows, after the agent's edit`);
    } catch (error) {
      log(`[stepwise] could not save ${key}, which no tab shows, after the agent's edit: ${String(error)}`);
    }
  }
  return result;
}

/** The documents an edit names, as VS Code spells their URIs. */
function editedUris(params: ApplyWorkspaceEditParams): Set<string> {
  const out = new Set<string>();
  const add = (uri: string | undefined) => {
    if (!uri) return;
    try {
      out.add(vscode.Uri.parse(uri).toString());
    } catch {
      /* not a URI: the client's own handler says so */
    }
  };
  const edit = params?.edit;
  for (const uri of Object.keys(edit?.changes ?? {})) add(uri);
  for (const change of edit?.documentChanges ?? []) {
    if ('textDocument' in change) add(change.textDocument.uri);
    else if ('uri' in change) add(change.uri);
  }
  return out;
}

/** The documents the user sees: in a tab of any group (a diff's two sides too) or a visible editor. */
function shownUris(): Set<string> {
  const out = new Set<string>();
  for (const tab of vscode.window.tabGroups.all.flatMap((g) => g.tabs)) {
    const input = tab.input as { uri?: vscode.Uri; original?: vscode.Uri; modified?: vscode.Uri } | undefined;
    for (const uri of [input?.uri, input?.original, input?.modified]) if (uri) out.add(uri.toString());
  }
  for (const editor of vscode.window.visibleTextEditors) out.add(editor.document.uri.toString());
  return out;
}
