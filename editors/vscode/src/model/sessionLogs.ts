// Each session's conversation as the Conversation view keeps it, apart: a folder's sessions run at the same time
// and their notifications interleave, so every event goes to the conversation of the session it names. A
// conversation is read from the server (`stepwise.conversation`) the first time it is needed; what arrives while
// it is read follows it. Pure logic: no `vscode`, no DOM (reading is given).
import { ConversationLog, type Entry, type Event } from './conversation';
import { sessionKey } from './sessions';

export class SessionLogs {
  /** By `sessionKey`, each with its folder and session. */
  private readonly logs = new Map<string, { workspace: string; session: string; log: ConversationLog }>();
  /** Conversations being read, with the events that arrive meanwhile. */
  private readonly loading = new Map<string, { promise: Promise<ConversationLog>; buffer: Event[] }>();
  /** Conversations that missed part of a run while they were read: read again when the run ends. */
  private readonly stale = new Set<string>();

  /** `read` asks the server for a session's conversation (none: an empty one). */
  constructor(private readonly read: (workspace: string, session: string) => Promise<Entry[]>) {}

  /** A session's conversation if it was read already. */
  known(workspace: string, session: string): ConversationLog | undefined {
    return this.logs.get(sessionKey(workspace, session))?.log;
  }

  /** A session's conversation: kept once read. */
  log(workspace: string, session: string): Promise<ConversationLog> {
    const key = sessionKey(workspace, session);
    const known = this.logs.get(key)?.log;
    if (known) return Promise.resolve(known);
    let loading = this.loading.get(key);
    if (!loading) {
      const buffer: Event[] = [];
      loading = { buffer, promise: this.fetch(workspace, session, buffer).finally(() => this.loading.delete(key)) };
      this.loading.set(key, loading);
    }
    return loading.promise;
  }

  private async fetch(workspace: string, session: string, buffer: Event[]): Promise<ConversationLog> {
    const key = sessionKey(workspace, session);
    const log = new ConversationLog();
    log.load(await this.read(workspace, session));
    // What arrived while it was read follows it, unless the server's answer has that run already (it may have
    // been read after those events): the run's end reads the conversation again, so nothing is lost.
    const known = new Set(log.entries.map((e) => e.runId).filter((r) => !!r));
    for (const e of buffer) {
      const runId = e.type === 'tool' ? e.call.runId : 'runId' in e ? e.runId : undefined;
      if (runId && known.has(runId)) {
        this.stale.add(key);
        continue;
      }
      if (e.type === 'ended') log.ended(e.runId);
      else log.apply(e);
    }
    this.logs.set(key, { workspace, session, log });
    return log;
  }

  /**
   * An event of a session into its conversation: the indexes of the entries it added or changed (to draw when
   * the view shows that session); `reload` when the conversation missed part of the run that ended and was
   * forgotten (to be read again). A conversation not read yet gets it all when it is read (the server keeps it).
   */
  apply(workspace: string, session: string, e: Event): number[] | 'reload' {
    const key = sessionKey(workspace, session);
    const log = this.logs.get(key)?.log;
    if (!log) {
      this.loading.get(key)?.buffer.push(e);
      return [];
    }
    if (e.type === 'ended' && this.stale.delete(key)) {
      this.logs.delete(key);
      return 'reload';
    }
    const applied = e.type === 'ended' ? log.ended(e.runId) : [log.apply(e)].filter((i): i is number => i !== undefined);
    // A round's diagnostics may change several cards.
    return e.type === 'diagnostics' ? log.changedCards : applied;
  }

  /** A session's conversation changed on the server (a rewind): read again when next needed. */
  forget(workspace: string, session: string): void {
    this.logs.delete(sessionKey(workspace, session));
  }

  /** Forgets the conversations of a folder's sessions the server no longer has (discarded). */
  retain(workspace: string, sessions: ReadonlySet<string>): void {
    for (const [key, l] of [...this.logs]) if (l.workspace === workspace && !sessions.has(l.session)) this.logs.delete(key);
  }

  /** A new server: every conversation is read again when next shown. */
  clear(): void {
    this.logs.clear();
  }
}
