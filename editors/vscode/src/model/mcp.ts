// A folder's MCP servers as `stepwise/mcp` reports them, and how the window shows the ones that failed: a
// warning in the status bar (each with its error in the tooltip) and a warning row in the plan view.
// Pure logic: no `vscode` import.
import type * as wire from '../protocol/generated';
import type { PlanNode } from './plan';

/** One server of `stepwise/mcp` as read: `wire.McpServer`, its origin and tool count possibly missing. */
export type McpServer = Pick<wire.McpServer, 'name' | 'state'> & Partial<wire.McpServer>;

/** `stepwise/mcp` as read (no `session` from a server before sessions: the folder's own). */
export type McpParams = Omit<wire.McpParams, 'servers' | 'session'> & { session?: string; servers: McpServer[] };

/** The servers of a payload that can be shown; anything malformed is left out. */
export function mcpServers(p: McpParams | undefined): McpServer[] {
  if (!p || !Array.isArray(p.servers)) return [];
  return p.servers.filter((s) => s && typeof s.name === 'string').map((s) => ({ ...s, name: s.name }));
}

export function failedServers(servers: McpServer[] | undefined): McpServer[] {
  return (servers ?? []).filter((s) => s.state === 'failed');
}

function oneLine(s: string, max: number): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** `MCP server docs (settings) failed: connection refused` */
export function failureLine(s: McpServer): string {
  const origin = s.origin ? ` (${s.origin})` : '';
  return `MCP server ${s.name}${origin} failed${s.error ? `: ${oneLine(s.error, 300)}` : ''}`;
}

/** What the status bar adds: ` · $(warning) MCP: docs failed` and one tooltip line per failed server. */
export function mcpStatus(servers: McpServer[] | undefined): { text: string; tooltip: string[] } | undefined {
  const failed = failedServers(servers);
  if (failed.length === 0) return undefined;
  const names = failed.length <= 2 ? failed.map((s) => s.name).join(', ') : `${failed.length} servers`;
  return { text: ` · $(warning) MCP: ${names} failed`, tooltip: failed.map(failureLine) };
}

/** The plan view's warning rows, one per failed server (named with its folder when the window has several). */
export function mcpNodes(workspace: string, servers: McpServer[] | undefined, folderName?: string): PlanNode[] {
  return failedServers(servers).map((s) => {
    const where = folderName ? ` in ${folderName}` : '';
    const line = failureLine(s);
    return {
      kind: 'warning' as const,
      id: `${workspace}|mcp|${s.name}`,
      workspace,
      label: `MCP server ${s.name} failed${where}`,
      description: s.error ? oneLine(s.error, 80) : undefined,
      tooltip: `${line}\nIts tools are left out of the agent's runs. Stepwise: Check Setup lists the MCP servers.`,
      icon: { id: 'warning', color: 'list.warningForeground' },
      accessibility: `warning: ${line}`,
      contextValue: 'stepwise.mcpFailed',
    };
  });
}
