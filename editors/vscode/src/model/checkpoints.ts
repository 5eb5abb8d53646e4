// Checkpoints and rewind: the server's checkpoint list as quick-pick entries, the one a plan item goes back to,
// the confirmation and the outcome in words. Pure logic: no `vscode` import.
import type * as wire from '../protocol/generated';

/** One entry of `stepwise.checkpoints` as read: `wire.CheckpointInfo`, all but its id possibly missing. */
export type Checkpoint = Pick<wire.CheckpointInfo, 'id'> & Partial<Omit<wire.CheckpointInfo, 'id'>>;

/** The result of `stepwise.rewind` as read: `wire.Rewound`, each part possibly missing (older servers). */
export type RewindResult = Partial<wire.Rewound>;

export type Restore = wire.Restore;

/** `stepwise/checkpoint` as read: `wire.CheckpointParams`, its run and round possibly missing. */
export type CheckpointParams = Pick<wire.CheckpointParams, 'workspace' | 'id'> & Partial<wire.CheckpointParams>;

function files(c: Checkpoint): string[] {
  return Array.isArray(c.files) ? c.files.map(String) : [];
}

function oneLine(s: string, max = 60): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** A quick-pick entry: `round 2 · Add a farewell` / `“prompt” · 14:03:11` / the files changed after it. */
export function checkpointItem(c: Checkpoint): { label: string; description: string; detail: string } {
  const round = Number.isInteger(c.round) ? `round ${c.round}` : 'checkpoint';
  const label = c.step ? `${round} · ${oneLine(c.step)}` : round;
  const when = c.time ? new Date(c.time) : undefined;
  const time = when && !Number.isNaN(when.getTime()) ? when.toLocaleTimeString() : c.time ?? '';
  const description = [c.prompt ? `“${oneLine(c.prompt, 40)}”` : '', time].filter(Boolean).join(' · ');
  const changed = files(c);
  const detail = changed.length === 0 ? 'no file changed after it' : `${changed.length} file${changed.length === 1 ? '' : 's'} changed after it: ${changed.join(', ')}`;
  return { label, description, detail };
}

/** The checkpoint "Rewind to here" on a plan item goes back to: the first one taken while the item was in progress. */
export function checkpointForStep(checkpoints: Checkpoint[], stepText: string): Checkpoint | undefined {
  const want = stepText.trim();
  return checkpoints.find((c) => (c.step ?? '').trim() === want);
}

/** The confirmation before a rewind: what goes back. */
export function rewindQuestion(c: Checkpoint, folderName: string): { message: string; detail: string } {
  const changed = files(c);
  const where = Number.isInteger(c.round) ? ` to before round ${c.round}${c.step ? ` (${oneLine(c.step)})` : ''}` : '';
  const list = changed.length === 0 ? 'No file changed after this checkpoint.' : `These files go back:\n${changed.map((f) => `  ${f}`).join('\n')}`;
  return {
    message: `Rewind ${folderName}${where}?`,
    detail: `${list}\nRewind puts back the files, the conversation and the plan; Files Only or Conversation Only puts back one of them. Open documents can be undone with Undo; a file you changed yourself since is left alone.`,
  };
}

/** The confirmation's buttons, and what each puts back. */
export const REWIND_CHOICES: readonly { title: string; restore: Restore }[] = [
  { title: 'Rewind', restore: 'both' },
  { title: 'Files Only', restore: 'files' },
  { title: 'Conversation Only', restore: 'conversation' },
];

/** What the user's answer to the confirmation puts back; undefined when cancelled. */
export function restoreFor(answer: string | undefined): Restore | undefined {
  return REWIND_CHOICES.find((c) => c.title === answer)?.restore;
}

/** The outcome of a rewind in one line. */
export function rewindSummary(r: RewindResult | null | undefined): string {
  const n = r?.files?.length ?? 0;
  const parts = [`stepwise: rewound ${n} file${n === 1 ? '' : 's'}`];
  if (r?.conversation) parts.push('the conversation and the plan are back as they were');
  const conflicts = r?.conflicts ?? [];
  if (conflicts.length > 0) parts.push(`left alone, changed since by you: ${conflicts.join(', ')}`);
  return parts.join('; ') + '.';
}
