// The Conversation view's background tasks, on the extension's side: the session in view's list
// (model/background.ts) sent to the page when it changes (up to ten times a second while a task prints: on its
// own, not with the plan and state), and the page's Stop (`stepwise.killBackground`) and Dismiss.
import type { Connection } from '../connection/client';
import type { BackgroundTask } from '../model/background';
import { SERVER_COMMANDS } from '../model/commands';
import type { Core } from '../setup/core';

export class BackgroundTasksPanel {
  constructor(
    private readonly core: Core,
    private readonly connection: Connection,
    /** Sends the page a message (nothing while it is not ready). */
    private readonly post: (message: unknown) => void,
    /** The folder the view shows. */
    private readonly folder: () => string | undefined,
  ) {
    // The session in view's tasks only: each session has its own.
    connection.events.backgroundListeners.push((ws, session) => ws === this.folder() && session === core.folders.viewed(ws) && this.send(ws));
  }

  /** The tasks the view lists for `ws`. */
  tasks(ws: string | undefined): BackgroundTask[] {
    return this.core.folders.get(ws)?.background.shown() ?? [];
  }

  private send(ws: string): void {
    this.post({ type: 'background', tasks: this.tasks(ws) });
  }

  /** Stop: the task's whole process tree ends; the server's `stepwise/background` then shows how it ended.
   * The answer goes to the transcript, a failure to the user (and the button comes back). */
  async kill(id: string): Promise<void> {
    const ws = this.folder();
    const client = this.connection.running();
    // No server: its tasks ended with it; the button comes back.
    if (!ws || !id || !client) return void this.post({ type: 'backgroundStopFailed', id });
    try {
      const said = await this.core.execute(client, SERVER_COMMANDS.killBackground, [{ workspace: ws, session: this.core.folders.viewed(ws), taskId: id }]);
      if (typeof said === 'string' && said) this.core.writer.line(`⏹ ${said}`);
    } catch (error) {
      this.post({ type: 'backgroundStopFailed', id });
      throw error;
    }
  }

  /** Dismiss: an ended task leaves the list. */
  dismiss(id: string): void {
    const ws = this.folder();
    if (ws && this.core.folders.get(ws)?.background.dismiss(id)) this.send(ws);
  }
}
