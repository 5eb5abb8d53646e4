// The server's questions (`stepwise/ask`, docs/protocol.md "Requests from the server"): what the card and
// the notification show for each kind, read from the typed fields (never from the wording of `message`), and
// the three answers. Pure logic: no `vscode`, no DOM.

import type * as wire from '../protocol/generated';

/** A question as the view keeps it: the server's params, any part possibly missing. */
export type Question = Partial<wire.AskParams>;

export type Choice = wire.AskChoice;

/** The answers, in the order the buttons show them. */
export const CHOICES: readonly { choice: Choice; label: string; done: string }[] = [
  { choice: 'allow', label: 'Allow', done: 'Allowed' },
  { choice: 'allowSession', label: 'Allow for Session', done: 'Allowed for this session' },
  { choice: 'deny', label: 'Deny', done: 'Denied' },
];

/** What a card shows of a question: a title, what it concerns in code (a command, a path), a detail line. */
export interface QuestionText {
  title: string;
  code?: string;
  detail?: string;
  /** A child agent's question (`subagent`): the child, `sa-1: <description>`. */
  asker?: string;
}

export function questionText(q: Question): QuestionText {
  const t = kindText(q);
  const asker = askerOf(q);
  return asker ? { ...t, asker } : t;
}

/** The child asking, as the message's prefix names it (`[subagent sa-1: <description>] `), else its id. */
export function askerOf(q: Question): string | undefined {
  if (!q.subagent) return undefined;
  const m = /^\[subagent (sa-\d+(?:: .*?)?)\] /.exec(q.message ?? '');
  return m && m[1].split(':')[0] === q.subagent ? m[1] : q.subagent;
}

function kindText(q: Question): QuestionText {
  switch (q.kind) {
    case 'command':
      return { title: 'Run this command?', code: q.command ?? '' };
    case 'unsandboxed':
      return {
        title: 'The sandbox stopped this command. Run it outside the sandbox?',
        code: q.command ?? '',
        detail: `the sandbox stopped: ${q.stopped || 'a write or connection it does not allow'}`,
      };
    case 'protectedWrite':
      return { title: 'Write a protected file?', code: q.path ?? '', detail: q.why ?? undefined };
    case 'mcpTool':
      return { title: `Use the MCP tool ${q.tool ?? '?'} of ${q.server ?? '?'}?` };
    default:
      // A kind this extension does not know yet: the server's own line (without a child's prefix: `asker` names it).
      return { title: (q.message ?? 'stepwise asks for your leave').replace(/^\[subagent [^\n]*?\] /, '') };
  }
}

/** The question in one line, for a notification. */
export function questionLine(q: Question, folder?: string): string {
  const t = questionText(q);
  const where = folder ? ` (${folder})` : '';
  const who = t.asker ? `subagent ${t.asker} asks: ` : '';
  return `stepwise${where}: ${who}${t.title}${t.code ? ` ${t.code}` : ''}${t.detail ? ` — ${t.detail}` : ''}`;
}

/** The choice a label names (a notification's button), if any. */
export function choiceOf(label: string | undefined): Choice | undefined {
  return CHOICES.find((c) => c.label === label)?.choice;
}
