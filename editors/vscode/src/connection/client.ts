// The language client: one `stepwise lsp` for all folders of the window, started when stepwise is used,
// restarted when its settings or key change; settings middleware, code lenses, saving documents on request.
import * as vscode from 'vscode';
import {
  ApplyWorkspaceEditRequest,
  CodeLensRequest,
  DidChangeConfigurationNotification,
  LanguageClient,
  MessageType,
  RevealOutputChannelOn,
  ShowMessageRequest,
  State,
  TransportKind,
  type ClientCapabilities,
  type FeatureState,
  type ServerCapabilities,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';

import { OWN_SERVER_COMMANDS, SERVER_COMMANDS, mapLensCommand } from '../model/commands';
import { sessionOf } from '../model/sessions';
import { Core, errorText, folderName, folderRefs, readSettings } from '../setup/core';
import { Events } from './events';
import { QueryAnswerer } from './query';
import { applyEdit } from './applyEdit';
import type { PlanParams } from '../model/plan';
import { effectiveProvider, initializationOptions, secretKeyName, serverEnv, serverSettings } from '../setup/settings';
import { foldersWithSession, type Setup } from '../setup/setup';
import type { Requests } from '../protocol/generated';
import { CHOICES, choiceOf, questionLine, type Choice, type Question } from '../model/ask';
import type { Display } from '../setup/core';

type SaveDocuments = Requests['stepwise/saveDocuments'];
type Ask = Requests['stepwise/ask'];
type Query = Requests['stepwise/query'];

/**
 * Declares `experimental.stepwise.saveDocuments` (the server asks us to save documents before shell commands),
 * `experimental.stepwise.ask` (its questions come typed, as `stepwise/ask`) and `experimental.stepwise.query`
 * (the server asks VS Code's language features instead of starting its own servers).
 */
class StepwiseCapabilities implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ??= {}) as Record<string, any>;
    experimental.stepwise = { ...(experimental.stepwise ?? {}), saveDocuments: true, ask: true, query: true };
  }
  /** The server's commands the extension has as its own (New Session, Apply Session, Close Session: they ask and
   * show more than the server's) are left to it: VS Code refuses a second command of one id, and the language
   * client would fail to start. The extension runs them through `Core.execute`. */
  preInitialize(capabilities: ServerCapabilities): void {
    const commands = capabilities.executeCommandProvider?.commands;
    if (Array.isArray(commands)) capabilities.executeCommandProvider = { ...capabilities.executeCommandProvider, commands: commands.filter((c) => !OWN_SERVER_COMMANDS.includes(c)) };
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: 'static' };
  }
  clear(): void {}
}

export class Connection {
  readonly events: Events;
  /** Called with each client once it runs (after a start or a restart). */
  readonly startListeners: ((client: LanguageClient) => void)[] = [];
  /** Answers a question of the server in the Conversation view; `undefined` when the view does not take it. */
  askInView: ((question: Question, token: vscode.CancellationToken) => Promise<Choice | undefined> | undefined) | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private lensTimer: NodeJS.Timeout | undefined;
  /** Follows diagnostics from activation on, so a query knows what was published before it came. */
  private readonly query = new QueryAnswerer();

  constructor(
    private readonly core: Core,
    private readonly ui: Display,
    private readonly setup: Setup,
  ) {
    this.events = new Events(core, ui, setup, () => this.refreshLenses(), (ws) => void this.fetchSessions(ws));
    // A session comes into view: its plan, when this window has not had it yet.
    core.viewListeners.push((ws) => {
      const client = this.running();
      if (client && (core.folders.get(ws)?.planUpdates ?? 0) === 0) void this.fetchPlan(client, ws);
    });
  }

  async ensureClient(interactive: boolean): Promise<LanguageClient | undefined> {
    const core = this.core;
    if (core.client && core.client.state === State.Running) return core.client;
    if (core.starting) return core.starting;
    core.starting = this.startClient(interactive).finally(() => (core.starting = undefined));
    return core.starting;
  }

  /** The client when it runs, else undefined (nothing is started). */
  running(): LanguageClient | undefined {
    const client = this.core.client;
    return client && client.state === State.Running ? client : undefined;
  }

  private async startClient(interactive: boolean): Promise<LanguageClient | undefined> {
    const core = this.core;
    if (core.client) {
      const old = core.client;
      core.client = undefined;
      await old.stop(5000).catch(() => undefined);
    }
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length === 0) {
      if (interactive) void vscode.window.showWarningMessage('stepwise: open a folder first; the agent works in a workspace folder.');
      return undefined;
    }
    const settings = readSettings();
    const provider = effectiveProvider(settings.provider, process.env);
    const secret = await core.context.secrets.get(secretKeyName(provider));
    const server = this.setup.resolveServer();
    if (!server.found) {
      this.setup.showMissingBinary(server);
      return undefined;
    }
    core.serverProblem = undefined;

    const serverOptions: ServerOptions = {
      command: server.command,
      args: ['lsp'],
      transport: TransportKind.stdio,
      options: { env: serverEnv(process.env, provider, secret), cwd: folders[0].uri.fsPath },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      synchronize: { configurationSection: 'stepwise' },
      initializationOptions: initializationOptions(settings),
      outputChannel: core.serverLog,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationFailedHandler: (error) => {
        this.setup.serverFailed(`stepwise: the server failed to start: ${errorText(error)}`);
        return false;
      },
      middleware: {
        workspace: {
          // Answer `workspace/configuration` for `stepwise` with only the keys that are set, so unset ones
          // fall back to the server's environment (MODEL_ID, ANTHROPIC_BASE_URL, ...).
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return result.map((value, i) => {
              const item = params.items[i];
              if (item?.section === 'stepwise') {
                const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined;
                const settings = serverSettings(readSettings(scope));
                core.log(`[stepwise] settings for ${item.scopeUri ?? 'the window'}: ${JSON.stringify(settings)}`);
                return settings;
              }
              return value;
            });
          },
          didChangeConfiguration: async () => {
            core.log('[stepwise] settings changed');
            await core.client?.sendNotification(DidChangeConfigurationNotification.type, {
              settings: { stepwise: serverSettings(readSettings()) },
            });
          },
        },
        // The server's lenses run `stepwise.plan`, which only returns data: show the plan view instead.
        provideCodeLenses: async (document, token, next) => {
          const lenses = await next(document, token);
          for (const lens of lenses ?? []) mapLens(lens);
          return lenses;
        },
        resolveCodeLens: async (lens, token, next) => {
          const resolved = await next(lens, token);
          if (resolved) mapLens(resolved);
          return resolved;
        },
      },
    };

    const client = new LanguageClient('stepwise', 'Stepwise', serverOptions, clientOptions);
    client.registerFeature(new StepwiseCapabilities());
    // Questions about tool calls come typed: in the Conversation view while it shows, else as a notification.
    client.onRequest('stepwise/ask', (params: Ask['params'], token: vscode.CancellationToken) => this.ask(params, token));
    // Anything else the server asks (trusting a folder's .mcp.json) as the language client would show it.
    client.onRequest(ShowMessageRequest.type, async (params) => {
      const actions = params?.actions ?? [];
      const show =
        params?.type === MessageType.Error
          ? vscode.window.showErrorMessage
          : params?.type === MessageType.Warning
            ? vscode.window.showWarningMessage
            : vscode.window.showInformationMessage;
      return (await show(String(params?.message ?? ''), ...actions)) ?? null;
    });
    client.onRequest('stepwise/saveDocuments', (params: SaveDocuments['params']) => this.saveDocuments(params));
    client.onRequest('stepwise/query', (params: Query['params']) => this.query.answer(params));
    // The agent's edits as the client applies them, then saved where no tab shows the document (applyEdit.ts).
    client.onRequest(ApplyWorkspaceEditRequest.type, (params) => applyEdit(client, params, (line) => core.log(line)));
    this.events.listen(client);
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && core.client === client) core.folders.serverStopped();
      this.ui.update();
    });

    core.client = client;
    core.folders.serverStarted();
    core.log(`[stepwise] starting ${server.command} lsp for ${folders.map((f) => f.uri.fsPath).join(', ')}`);
    try {
      await client.start();
    } catch (error) {
      if (core.client === client) core.client = undefined;
      this.setup.serverFailed(`stepwise: could not start ${server.command}: ${errorText(error)}`);
      this.ui.update();
      return undefined;
    }
    this.ui.update();
    void this.fetchPlans(client).then(() => this.settleLenses(client));
    for (const f of folderRefs()) void this.fetchSessions(f.uri, client);
    for (const listener of this.startListeners) listener(client);
    return client;
  }

  /**
   * Asks for each folder's plan after a (re)start, so the view shows what this server has (it also re-sends
   * `stepwise/plan` after `initialized` for restored plans). A `stepwise/plan` that arrives meanwhile wins.
   */
  private async fetchPlans(client: LanguageClient): Promise<void> {
    for (const f of folderRefs()) await this.fetchPlan(client, f.uri);
  }

  /** The plan of the folder's session in view. */
  private async fetchPlan(client: LanguageClient, workspace: string): Promise<void> {
    const folders = this.core.folders;
    const session = folders.viewed(workspace);
    const seen = folders.get(workspace, session)?.planUpdates ?? 0;
    try {
      const result = (await this.core.execute(client, SERVER_COMMANDS.plan, [{ workspace, session }])) as PlanParams | null;
      if (result && Array.isArray(result.items) && (folders.get(workspace, session)?.planUpdates ?? 0) === seen && this.core.client === client)
        this.events.onPlan({ ...result, workspace, session });
    } catch (error) {
      this.core.log(`[stepwise] stepwise.plan for ${workspace} (${session}) failed: ${String(error)}`);
    }
  }

  /** A folder's sessions as the server has them (after a start or a reload too: they survive both). */
  async fetchSessions(workspace: string, client = this.running()): Promise<void> {
    if (!client) return;
    try {
      const result = await this.core.execute(client, SERVER_COMMANDS.sessions, [{ workspace }]);
      if (this.core.client === client) this.events.onSessions(workspace, result);
    } catch (error) {
      this.core.log(`[stepwise] stepwise.sessions for ${workspace} failed: ${String(error)}`);
    }
  }

  /** Starts the server at activation only where stepwise was used: a folder with a saved session, or the plan view open. */
  startIfUsed(): void {
    const saved = foldersWithSession();
    if (saved.length > 0) {
      this.core.log(`[stepwise] a saved session in ${saved.join(', ')}: starting the server`);
      void this.ensureClient(false);
    } else if (this.ui.view.visible) {
      void this.ensureClient(false);
    }
  }

  scheduleRestart(why: string): void {
    const core = this.core;
    // Only a server that runs, starts or failed to start is (re)started; one never needed stays unstarted.
    if (!core.client && !core.starting && !core.serverProblem) return;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      core.log(`[stepwise] restarting the server: ${why}`);
      void (async () => {
        if (core.starting) await core.starting.catch(() => undefined);
        core.starting = this.startClient(false).finally(() => (core.starting = undefined));
      })();
    }, 300);
  }

  /**
   * While VS Code restores editors at start-up it can drop a code lens answer (or never ask), so ask again a
   * few times during the first seconds when there is a plan to show.
   */
  private settleLenses(client: LanguageClient): void {
    for (const delay of [1000, 3000, 7000]) {
      const t = setTimeout(() => {
        if (this.core.client === client && this.core.folders.hasPlanItems()) this.refreshLenses(0);
      }, delay);
      this.core.disposables.push({ dispose: () => clearTimeout(t) });
    }
  }

  /**
   * Asks VS Code to fetch the server's code lenses again (as `workspace/codeLens/refresh` does). The server
   * refreshes them on plan changes, but not for the editors VS Code restores while the client starts (after a
   * reload VS Code sometimes never asks, or drops the answer), so the plan's lens would stay missing.
   */
  refreshLenses(delay = 150): void {
    if (this.lensTimer) clearTimeout(this.lensTimer);
    this.lensTimer = setTimeout(() => {
      this.lensTimer = undefined;
      const feature = this.core.client?.getFeature(CodeLensRequest.method) as unknown as
        | { getAllProviders?: () => Iterable<{ onDidChangeCodeLensEmitter?: vscode.EventEmitter<void> }> }
        | undefined;
      try {
        for (const p of feature?.getAllProviders?.() ?? []) p.onDidChangeCodeLensEmitter?.fire();
      } catch (error) {
        this.core.log(`[stepwise] code lens refresh failed: ${String(error)}`);
      }
    }, delay);
  }

  private async ask(params: Ask['params'], token: vscode.CancellationToken): Promise<Ask['result']> {
    const question: Question = params ?? {};
    const inView = this.askInView?.(question, token);
    const choice = inView ? await inView : await this.askInWindow(question);
    return { answer: choice ?? 'deny' };
  }

  /** A question as VS Code's notification, with the same three answers as the card. */
  async askInWindow(question: Question): Promise<Choice | undefined> {
    const ws = question.workspace;
    const folder = ws ? (this.core.folders.list(ws).length > 1 ? this.core.sessionName(ws, sessionOf(question)) : folderName(ws)) : undefined;
    const pick = await vscode.window.showWarningMessage(questionLine(question, folder), ...CHOICES.map((c) => c.label));
    return choiceOf(pick);
  }

  private async saveDocuments(params: Partial<SaveDocuments['params']>): Promise<NonNullable<SaveDocuments['result']>> {
    const saved: string[] = [];
    for (const uri of params?.uris ?? []) {
      let normalized = uri;
      try {
        normalized = vscode.Uri.parse(uri).toString();
      } catch {
        /* keep as is */
      }
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri || d.uri.toString() === normalized);
      if (!doc) continue;
      try {
        if (!doc.isDirty || (await doc.save())) saved.push(uri);
      } catch (error) {
        this.core.log(`[stepwise] could not save ${uri}: ${String(error)}`);
      }
    }
    return { saved };
  }

  /** Stops the timers and the client. */
  async dispose(): Promise<void> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.lensTimer) clearTimeout(this.lensTimer);
    this.query.dispose();
    const client = this.core.client;
    this.core.client = undefined;
    if (client) await client.stop(3000).catch(() => undefined);
  }
}

function mapLens(lens: vscode.CodeLens): void {
  if (lens.command) {
    const mapped = mapLensCommand(lens.command.command);
    if (mapped && mapped !== lens.command.command) lens.command = { ...lens.command, command: mapped, arguments: [] };
  }
}
