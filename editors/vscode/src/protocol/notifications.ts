// The server's notifications, typed: each handler gets the params its method carries (generated.ts).
import type { Disposable, LanguageClient } from 'vscode-languageclient/node';

import type { Notifications } from './generated';

/** Listens to one of the server's `stepwise/*` notifications. */
export function onNotification<M extends keyof Notifications>(
  client: LanguageClient,
  method: M,
  handler: (params: Notifications[M]) => void,
): Disposable {
  return client.onNotification(method, handler);
}
