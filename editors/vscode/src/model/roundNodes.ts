// The Transcript view's tree: folder (several folders only) → run → round → the round's text and tool calls.
// Every round, and what happened in it, carries the checkpoint taken before the round, so "Rewind to Here"
// works on any of them; a run rewinds to before its prompt. Pure logic: no `vscode` import.
import type { FolderRef } from './plan';
import type { IconSpec, TreeNode } from './treeNode';
import { RoundLog, type RoundEntry, type RoundItem, type RunEntry } from './rounds';

/** `contextValue` is `stepwise.transcript.<kind>`, with `.rewindable` when there is a checkpoint to go back
 * to; the newest run is `expanded`. */
export interface RoundNode extends TreeNode<'folder' | 'run' | 'round' | 'call' | 'text', RoundNode> {
  /** The checkpoint "Rewind to Here" goes back to. */
  checkpoint?: string;
}

function oneLine(s: string, max = 80): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

function context(kind: RoundNode['kind'], checkpoint: string | undefined): string {
  return `stepwise.transcript.${kind}${checkpoint ? '.rewindable' : ''}`;
}

const ENDED: Record<string, string> = {
  end_turn: 'done',
  cancelled: 'cancelled',
  error: 'failed',
  loop_detected: 'stopped: loop detected',
  max_rounds: 'stopped: max rounds',
  max_tokens: 'stopped: output limit',
  plan_ready: 'plan ready: waiting for your approval',
};

function runIcon(r: RunEntry): IconSpec {
  if (r.state === 'running') return { id: 'sync~spin', color: 'charts.yellow' };
  if (r.state === 'waiting') return { id: 'bell', color: 'charts.yellow' };
  if (r.reason === 'end_turn') return { id: 'pass', color: 'testing.iconPassed' };
  if (r.reason === 'plan_ready') return { id: 'checklist', color: 'charts.blue' };
  if (r.reason === 'error') return { id: 'error', color: 'testing.iconFailed' };
  if (r.reason === 'cancelled') return { id: 'circle-slash' };
  if (r.reason) return { id: 'warning', color: 'list.warningForeground' };
  return { id: 'history' };
}

function itemNode(workspace: string, parent: string, checkpoint: string | undefined, item: RoundItem, index: number): RoundNode {
  if (item.kind === 'text') {
    const label = oneLine(item.text) || '(text)';
    return {
      kind: 'text',
      id: `${parent}|text${index}`,
      workspace,
      label,
      tooltip: item.text.length > 2000 ? `${item.text.slice(0, 2000)}…` : item.text,
      icon: { id: 'comment' },
      accessibility: `the model: ${label}`,
      contextValue: context('text', checkpoint),
      checkpoint,
    };
  }
  const label = item.summary ? `${item.name} ${oneLine(item.summary, 70)}` : item.name;
  const word = item.state === 'running' ? 'running' : item.state === 'failed' ? 'failed' : 'done';
  const icon: IconSpec =
    item.state === 'running' ? { id: 'sync~spin' } : item.state === 'failed' ? { id: 'error', color: 'testing.iconFailed' } : { id: 'pass', color: 'testing.iconPassed' };
  return {
    kind: 'call',
    id: `${parent}|call${item.id || index}`,
    workspace,
    label,
    description: item.state === 'done' ? undefined : word,
    tooltip: [label, item.output ? `\n${item.output}` : ''].join(''),
    icon,
    accessibility: `tool call ${word}: ${label}`,
    contextValue: context('call', checkpoint),
    checkpoint,
  };
}

function roundNode(workspace: string, run: RunEntry, round: RoundEntry, index: number): RoundNode {
  const id = `${workspace}|round|${round.checkpoint ?? `${run.runId}#${index}`}`;
  const label = Number.isInteger(round.round) ? `Round ${round.round}` : `Round ${index + 1}`;
  const children = round.items.map((item, i) => itemNode(workspace, id, round.checkpoint, item, i));
  if (round.omitted > 0)
    children.push({
      kind: 'text',
      id: `${id}|omitted`,
      workspace,
      label: `… ${round.omitted} more (see the Stepwise output)`,
      tooltip: 'Only the first entries of a round are kept here; the output channel Stepwise has them all.',
      icon: { id: 'ellipsis' },
      accessibility: `${round.omitted} more entries`,
      contextValue: context('text', round.checkpoint),
      checkpoint: round.checkpoint,
    });
  const files = round.files;
  const tip = [`${label} of “${oneLine(run.prompt ?? run.runId, 120)}”`];
  if (round.step) tip.push(`Step in progress: ${round.step}`);
  if (files) tip.push(files.length === 0 ? 'Rewinding to here puts back no file.' : `Rewinding to here puts back:\n${files.map((f) => `  ${f}`).join('\n')}`);
  if (!round.checkpoint) tip.push('No checkpoint was taken before this round.');
  const parts = [round.step ? oneLine(round.step, 50) : '', files && files.length > 0 ? `${files.length} file${files.length === 1 ? '' : 's'} after` : ''];
  const description = parts.filter(Boolean).join(' · ') || undefined;
  return {
    kind: 'round',
    id,
    workspace,
    label,
    description,
    tooltip: tip.join('\n'),
    icon: { id: round.checkpoint ? 'history' : 'circle-small' },
    accessibility: `${label}${round.step ? `, ${round.step}` : ''}${files ? `, ${files.length === 1 ? '1 file goes' : `${files.length} files go`} back` : ''}`,
    contextValue: context('round', round.checkpoint),
    checkpoint: round.checkpoint,
    children,
  };
}

function runNode(workspace: string, run: RunEntry, newest: boolean): RoundNode {
  const checkpoint = RoundLog.firstCheckpoint(run);
  const label = oneLine(run.prompt ?? '') || `run ${run.runId}`;
  const state = run.state === 'idle' ? (run.reason ? ENDED[run.reason] ?? run.reason : undefined) : run.state;
  const n = run.rounds.length;
  const description = [`${n} round${n === 1 ? '' : 's'}`, state].filter(Boolean).join(' · ');
  return {
    kind: 'run',
    id: `${workspace}|run|${run.runId}`,
    workspace,
    label,
    description,
    tooltip: `${run.prompt ?? `run ${run.runId}`}\n${description}${checkpoint ? '\nRewind to Here: back to before this task.' : ''}`,
    icon: runIcon(run),
    accessibility: `run: ${label}, ${description}`,
    contextValue: context('run', checkpoint),
    checkpoint,
    expanded: newest,
    children: run.rounds.map((r, i) => roundNode(workspace, run, r, i)),
  };
}

/** One folder's runs, oldest first; the newest shown expanded. */
export function runNodes(workspace: string, log: RoundLog | undefined): RoundNode[] {
  const runs = log?.runs ?? [];
  return runs.map((r, i) => runNode(workspace, r, i === runs.length - 1));
}

/** The view's title over the window's folders, saying what it holds while collapsed: `Transcript 1 run, 4 rounds`;
 * `Transcript` before any run. */
export function transcriptTitle(logs: (RoundLog | undefined)[]): string {
  const runs = logs.flatMap((l) => l?.runs ?? []);
  if (runs.length === 0) return 'Transcript';
  const rounds = runs.reduce((n, r) => n + r.rounds.length, 0);
  return `Transcript ${runs.length} run${runs.length === 1 ? '' : 's'}, ${rounds} round${rounds === 1 ? '' : 's'}`;
}

/** Roots of the view. One folder: its runs. Several: one node per folder that has runs. */
export function roundTree(folders: FolderRef[], logs: (uri: string) => RoundLog | undefined): RoundNode[] {
  if (folders.length === 1) return runNodes(folders[0].uri, logs(folders[0].uri));
  return folders
    .filter((f) => (logs(f.uri)?.runs.length ?? 0) > 0)
    .map((f) => {
      const children = runNodes(f.uri, logs(f.uri));
      return {
        kind: 'folder' as const,
        id: `${f.uri}|folder`,
        workspace: f.uri,
        label: f.name,
        description: `${children.length} run${children.length === 1 ? '' : 's'}`,
        tooltip: f.name,
        icon: { id: 'folder' },
        accessibility: `${f.name}: ${children.length} runs`,
        contextValue: 'stepwise.transcript.folder',
        expanded: true,
        children,
      };
    });
}
