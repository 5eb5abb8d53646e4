// What the Conversation input completes, asked by the page as the user types: after `@` the folder's files
// (VS Code's search), after a leading `/` the folder's skills (the server's `stepwise.skills`; the page lists
// the view's own slash commands first, and those win a name).
import * as vscode from 'vscode';

import type { Connection } from '../connection/client';
import { SERVER_COMMANDS } from '../model/commands';
import type { Skill } from '../protocol/generated';
import { type Core, workspaceFolderOf } from '../setup/core';

/** The folder's files whose path holds `query`, shortest first (at most 20). */
export async function files(ws: string | undefined, query: string): Promise<string[]> {
  const folder = ws ? workspaceFolderOf(ws) : undefined;
  if (!folder) return [];
  const q = query.replace(/[[\]{}*?!]/g, '');
  const pattern = new vscode.RelativePattern(folder, q ? `**/*${q}*` : '**/*');
  const uris = await vscode.workspace.findFiles(pattern, '**/{node_modules,.git,target,dist,out}/**', 50);
  const items = uris.map((u) => vscode.workspace.asRelativePath(u, false)).sort((a, b) => a.length - b.length || a.localeCompare(b));
  return items.slice(0, 20);
}

/** The folder's skills as a run would find them now; none when the server cannot say (not started, older). */
export async function skills(core: Core, connection: Connection, ws: string | undefined): Promise<Skill[]> {
  const client = ws ? await connection.ensureClient(false) : undefined;
  if (!client || !ws) return [];
  try {
    const answer = await core.execute(client, SERVER_COMMANDS.skills, [{ workspace: ws }]);
    return answer?.skills ?? [];
  } catch (e) {
    core.log(`stepwise.skills failed: ${e instanceof Error ? e.message : String(e)}`);
    return [];
  }
}
