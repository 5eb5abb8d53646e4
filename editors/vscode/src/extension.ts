// The VS Code side of stepwise: one `stepwise lsp` for all folders of the window, the plan view, the live
// transcript, the status-bar item and the commands. The logic that can be tested without VS Code lives in
// plan.ts, settings.ts, commands.ts, status.ts and transcript.ts.
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as vscode from 'vscode';
import {
  CodeLensRequest,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  TransportKind,
  type ClientCapabilities,
  type FeatureState,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';

import { PlanStore, type FolderRef, type PlanNode, type PlanParams } from './plan';
import {
  SERVER_KEYS,
  bundledServerPath,
  doctorArgs,
  doctorProblemMessage,
  doctorReportLines,
  effectiveProvider,
  initializationOptions,
  missingBinaryMessage,
  needsRestart,
  parseDoctorReport,
  resolveServerCommand,
  secretKeyName,
  serverEnv,
  serverSettings,
  sessionFile,
  stateDir,
  type DoctorReport,
  type ServerCommand,
} from './settings';
import {
  EXTENSION_COMMANDS,
  SERVER_COMMANDS,
  chooseFolder,
  executeCommandParams,
  folderForUri,
  mapLensCommand,
  runArguments,
  validateApiKey,
  validatePrompt,
  workspaceArguments,
} from './commands';
import { compactedLine, statusBarModel, type CompactedParams, type StatusParams, type UsageParams } from './status';
import { TranscriptWriter, reminderLine, runEndLine, runStartLine, toolCallLines, usageLine, type ToolCallParams } from './transcript';

const PLAN_VIEW = 'stepwise.planView';

function folderRefs(): FolderRef[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => ({ uri: f.uri.toString(), name: f.name }));
}

function workspaceFolderOf(uri: string): vscode.WorkspaceFolder | undefined {
  return (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.toString() === uri);
}

function readSettings(scope?: vscode.ConfigurationScope): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration('stepwise', scope);
  const out: Record<string, unknown> = {};
  for (const key of [...SERVER_KEYS, 'serverPath']) out[key] = cfg.get(key);
  return out;
}

function isFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The folders of the window that have a session the server saved (it restores them when it starts). */
function foldersWithSession(): string[] {
  const dir = stateDir(process.env);
  if (!dir) return [];
  return (vscode.workspace.workspaceFolders ?? [])
    .filter((f) => {
      try {
        return fs.statSync(sessionFile(dir, fs.realpathSync(f.uri.fsPath))).isFile();
      } catch {
        return false;
      }
    })
    .map((f) => f.name);
}

class PlanTreeProvider implements vscode.TreeDataProvider<PlanNode> {
  private readonly changed = new vscode.EventEmitter<PlanNode | undefined | void>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly store: PlanStore) {}

  refresh(): void {
    this.changed.fire();
  }

  getTreeItem(n: PlanNode): vscode.TreeItem {
    const item = new vscode.TreeItem(
      n.label,
      n.children && n.children.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
    );
    item.id = n.id;
    item.description = n.description;
    item.tooltip = n.tooltip;
    item.iconPath = new vscode.ThemeIcon(n.icon.id, n.icon.color ? new vscode.ThemeColor(n.icon.color) : undefined);
    item.accessibilityInformation = { label: n.accessibility };
    item.contextValue = n.contextValue;
    return item;
  }

  getChildren(n?: PlanNode): PlanNode[] {
    return n ? n.children ?? [] : this.store.roots(folderRefs());
  }
}

/** Declares `experimental.stepwise.saveDocuments` so the server asks us to save documents before shell commands. */
class SaveDocumentsCapability implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ??= {}) as Record<string, any>;
    experimental.stepwise = { ...(experimental.stepwise ?? {}), saveDocuments: true };
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: 'static' };
  }
  clear(): void {}
}

class Stepwise implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  private readonly plans = new PlanStore();
  private readonly statuses = new Map<string, StatusParams>();
  private readonly usages = new Map<string, UsageParams>();
  /** The latest compaction per folder, shown in the status bar's tooltip. */
  private readonly compactions = new Map<string, CompactedParams>();
  private readonly prompts = new Map<string, string>();
  private readonly planUpdates = new Map<string, number>();
  private lastFolder: string | undefined;
  private lastTranscriptFolder: string | undefined;
  private serverProblem: string | undefined;

  private readonly transcript = vscode.window.createOutputChannel('Stepwise');
  private readonly serverLog = vscode.window.createOutputChannel('Stepwise Server');
  private readonly writer = new TranscriptWriter(this.transcript);
  private readonly statusItem = vscode.window.createStatusBarItem('stepwise.status', vscode.StatusBarAlignment.Left, 10);
  private readonly tree = new PlanTreeProvider(this.plans);
  private readonly view: vscode.TreeView<PlanNode>;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.view = vscode.window.createTreeView(PLAN_VIEW, { treeDataProvider: this.tree, showCollapseAll: false });
    this.statusItem.name = 'Stepwise';
    this.disposables.push(this.transcript, this.serverLog, this.statusItem, this.view);
    this.updateUi();
    // Opening the plan view is using stepwise: the server starts then (and shows the folders' plans).
    this.disposables.push(this.view.onDidChangeVisibility((e) => e.visible && void this.ensureClient(false)));

    const cmd = (id: string, fn: (...args: any[]) => unknown) => this.disposables.push(vscode.commands.registerCommand(id, fn));
    cmd(EXTENSION_COMMANDS.runTask, (prompt?: string) => this.runTask(typeof prompt === 'string' ? prompt : undefined));
    cmd(EXTENSION_COMMANDS.cancelRun, () => this.cancelRun());
    cmd(EXTENSION_COMMANDS.newSession, () => this.newSession());
    cmd(EXTENSION_COMMANDS.showPlan, () => this.showPlan());
    cmd(EXTENSION_COMMANDS.setApiKey, () => this.setApiKey());
    cmd(EXTENSION_COMMANDS.showTranscript, () => this.transcript.show(true));
    cmd(EXTENSION_COMMANDS.showServerLog, () => this.serverLog.show(true));
    cmd(EXTENSION_COMMANDS.checkSetup, () => this.checkSetup());

    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (needsRestart((k) => e.affectsConfiguration(k))) this.scheduleRestart('settings changed');
      }),
      context.secrets.onDidChange((e) => {
        if (e.key.startsWith('stepwise.apiKey.')) this.scheduleRestart('API key changed');
      }),
      vscode.workspace.onDidChangeWorkspaceFolders(() => {
        const uris = new Set(folderRefs().map((f) => f.uri));
        for (const p of this.plans.all()) if (!uris.has(p.workspace)) this.plans.delete(p.workspace);
        if (!this.client && !this.starting) this.startIfUsed();
        this.updateUi();
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateStatusBar()),
      vscode.window.onDidChangeVisibleTextEditors(() => {
        if (this.plans.all().some((p) => p.items.length > 0)) this.refreshLenses(500);
      }),
    );
  }

  // ---- the language client ------------------------------------------------------------------------------

  async ensureClient(interactive: boolean): Promise<LanguageClient | undefined> {
    if (this.client && this.client.state === State.Running) return this.client;
    if (this.starting) return this.starting;
    this.starting = this.startClient(interactive).finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async startClient(interactive: boolean): Promise<LanguageClient | undefined> {
    if (this.client) {
      const old = this.client;
      this.client = undefined;
      await old.stop(5000).catch(() => undefined);
    }
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length === 0) {
      if (interactive) void vscode.window.showWarningMessage('stepwise: open a folder first; the agent works in a workspace folder.');
      return undefined;
    }
    const settings = readSettings();
    const provider = effectiveProvider(settings.provider, process.env);
    const secret = await this.context.secrets.get(secretKeyName(provider));
    const server = this.resolveServer();
    if (!server.found) {
      this.showMissingBinary(server);
      return undefined;
    }
    this.serverProblem = undefined;

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
      outputChannel: this.serverLog,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationFailedHandler: (error) => {
        this.serverFailed(`stepwise: the server failed to start: ${error instanceof Error ? error.message : String(error)}`);
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
                this.serverLog.appendLine(`[stepwise] settings for ${item.scopeUri ?? 'the window'}: ${JSON.stringify(settings)}`);
                return settings;
              }
              return value;
            });
          },
          didChangeConfiguration: async () => {
            this.serverLog.appendLine('[stepwise] settings changed');
            await this.client?.sendNotification(DidChangeConfigurationNotification.type, {
              settings: { stepwise: serverSettings(readSettings()) },
            });
          },
        },
        // The server's lenses run `stepwise.plan`, which only returns data: show the plan view instead.
        provideCodeLenses: async (document, token, next) => {
          const lenses = await next(document, token);
          for (const lens of lenses ?? []) this.mapLens(lens);
          return lenses;
        },
        resolveCodeLens: async (lens, token, next) => {
          const resolved = await next(lens, token);
          if (resolved) this.mapLens(resolved);
          return resolved;
        },
      },
    };

    const client = new LanguageClient('stepwise', 'Stepwise', serverOptions, clientOptions);
    client.registerFeature(new SaveDocumentsCapability());
    client.onRequest('stepwise/saveDocuments', (params: { uris?: string[] }) => this.saveDocuments(params));
    client.onNotification('stepwise/plan', (p: PlanParams) => this.onPlan(p));
    client.onNotification('stepwise/status', (p: StatusParams) => this.onStatus(p));
    client.onNotification('stepwise/assistantText', (p: { workspace: string; text: string }) => {
      this.transcriptFolder(p.workspace);
      this.writer.text(p.text ?? '');
    });
    client.onNotification('stepwise/toolCall', (p: ToolCallParams) => {
      this.transcriptFolder(p.workspace);
      this.writer.lines(toolCallLines(p));
    });
    client.onNotification('stepwise/reminder', (p: { workspace: string; text: string }) => {
      this.transcriptFolder(p.workspace);
      this.writer.line(reminderLine(p.text ?? ''));
    });
    client.onNotification('stepwise/compacted', (p: CompactedParams) => {
      if (!p?.workspace) return;
      this.compactions.set(p.workspace, p);
      this.transcriptFolder(p.workspace);
      this.writer.line(compactedLine(p));
      this.updateStatusBar();
    });
    client.onNotification('stepwise/usage', (p: UsageParams) => {
      if (!p?.workspace) return;
      this.usages.set(p.workspace, p);
      this.transcriptFolder(p.workspace);
      this.writer.line(usageLine(p));
      this.updateStatusBar();
    });
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        for (const [ws, s] of this.statuses) if (s.state !== 'idle') this.statuses.set(ws, { workspace: ws, state: 'idle', reason: 'error', message: 'the server stopped' });
      }
      this.updateUi();
    });

    this.client = client;
    // Runs do not outlive their server process.
    this.statuses.clear();
    this.usages.clear();
    this.serverLog.appendLine(`[stepwise] starting ${server.command} lsp for ${folders.map((f) => f.uri.fsPath).join(', ')}`);
    try {
      await client.start();
    } catch (error) {
      if (this.client === client) this.client = undefined;
      this.serverFailed(`stepwise: could not start ${server.command}: ${error instanceof Error ? error.message : String(error)}`);
      this.updateUi();
      return undefined;
    }
    this.updateUi();
    void this.fetchPlans(client).then(() => this.settleLenses(client));
    return client;
  }

  /**
   * Asks for each folder's plan after a (re)start, so the view shows what this server has (it also re-sends
   * `stepwise/plan` after `initialized` for restored plans). A `stepwise/plan` that arrives meanwhile wins.
   */
  private async fetchPlans(client: LanguageClient): Promise<void> {
    for (const f of folderRefs()) {
      const seen = this.planUpdates.get(f.uri) ?? 0;
      try {
        const result = (await this.execute(client, SERVER_COMMANDS.plan, workspaceArguments(f.uri))) as PlanParams | null;
        if (result && Array.isArray(result.items) && (this.planUpdates.get(f.uri) ?? 0) === seen && this.client === client)
          this.onPlan({ ...result, workspace: f.uri });
      } catch (error) {
        this.serverLog.appendLine(`[stepwise] stepwise.plan for ${f.uri} failed: ${String(error)}`);
      }
    }
  }

  /** Starts the server at activation only where stepwise was used: a folder with a saved session, or the plan view open. */
  startIfUsed(): void {
    const saved = foldersWithSession();
    if (saved.length > 0) {
      this.serverLog.appendLine(`[stepwise] a saved session in ${saved.join(', ')}: starting the server`);
      void this.ensureClient(false);
    } else if (this.view.visible) {
      void this.ensureClient(false);
    }
  }

  /** `stepwise.serverPath`, else the server in this extension's package, else PATH. */
  private resolveServer(): ServerCommand {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const bundled = bundledServerPath(this.context.extensionPath);
    // A package unpacked without the executable bit (some unzip paths drop it) still works.
    try {
      if (fs.statSync(bundled).isFile()) fs.accessSync(bundled, fs.constants.X_OK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EACCES') fs.chmodSync(bundled, 0o755);
    }
    return resolveServerCommand(readSettings().serverPath, process.env, isFile, { baseDir: folders[0]?.uri.fsPath, bundled });
  }

  private showMissingBinary(server: ServerCommand): void {
    this.serverProblem = missingBinaryMessage(server.where);
    this.serverLog.appendLine(this.serverProblem);
    this.updateStatusBar();
    void vscode.window.showErrorMessage(this.serverProblem, 'Open Settings', 'Show Server Log').then((pick) => {
      if (pick === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'stepwise.serverPath');
      else if (pick === 'Show Server Log') this.serverLog.show();
    });
  }

  /** The server did not start: say so, and put the server's own report of the configuration in its log. */
  private serverFailed(msg: string): void {
    this.serverLog.appendLine(msg);
    this.serverProblem = msg;
    this.updateStatusBar();
    void vscode.window.showErrorMessage(msg, 'Check Setup', 'Show Server Log').then((p) => {
      if (p === 'Check Setup') void this.checkSetup();
      else if (p) this.serverLog.show();
    });
    const folder = vscode.workspace.workspaceFolders?.[0];
    const server = this.resolveServer();
    if (folder && server.found) void this.doctor(server, folder).then((r) => r && this.logReport(r));
  }

  /**
   * `stepwise doctor --json` for a folder: the configuration as the server reads it (its environment with the
   * key from the secret storage, the folder's `.env`, these settings). `undefined` when it gave no report.
   */
  private async doctor(server: ServerCommand, folder: vscode.WorkspaceFolder): Promise<DoctorReport | undefined> {
    const settings = readSettings(folder);
    const provider = effectiveProvider(settings.provider, process.env);
    const secret = await this.context.secrets.get(secretKeyName(provider));
    const args = doctorArgs(folder.uri.fsPath, settings);
    return new Promise((resolve) => {
      execFile(
        server.command,
        args,
        { env: serverEnv(process.env, provider, secret), cwd: folder.uri.fsPath, timeout: 15000 },
        (error, stdout, stderr) => {
          const report = parseDoctorReport(stdout);
          if (!report) this.serverLog.appendLine(`[stepwise] ${server.command} doctor gave no report: ${error?.message ?? ''} ${stderr}`);
          resolve(report);
        },
      );
    });
  }

  private logReport(r: DoctorReport): void {
    for (const line of doctorReportLines(r)) this.serverLog.appendLine(line);
  }

  /** Stepwise: Check Setup: the server's report of the configuration, in the server log, and a summary. */
  private async checkSetup(): Promise<void> {
    const folder = await this.pickFolder(undefined, 'Check the setup of which folder?');
    const wsFolder = folder && workspaceFolderOf(folder.uri);
    if (!wsFolder) return;
    const server = this.resolveServer();
    this.serverLog.appendLine(`[stepwise] server: ${server.where}${server.found ? '' : ' (not found)'}`);
    if (!server.found) {
      this.showMissingBinary(server);
      return;
    }
    const report = await this.doctor(server, wsFolder);
    this.serverLog.show(true);
    if (!report) {
      void vscode.window.showErrorMessage(`stepwise: ${server.command} doctor gave no report; see the server log.`);
      return;
    }
    this.logReport(report);
    const provider = effectiveProvider(readSettings(wsFolder).provider, process.env);
    const problem = doctorProblemMessage(report, provider);
    if (problem) void this.showConfigProblem(report, problem);
    else void vscode.window.showInformationMessage(`stepwise: ready in ${wsFolder.name} (model ${report.model.value}).`);
  }

  private async showConfigProblem(report: DoctorReport, message: string): Promise<void> {
    const actions = report.missing.includes('apiKey') ? ['Set API Key', 'Open Settings', 'Check Setup'] : ['Open Settings', 'Check Setup'];
    const pick = await vscode.window.showErrorMessage(message, ...actions);
    if (pick === 'Set API Key') await this.setApiKey();
    else if (pick === 'Open Settings')
      await vscode.commands.executeCommand('workbench.action.openSettings', report.missing.includes('model') ? 'stepwise.model' : 'stepwise');
    else if (pick === 'Check Setup') await this.checkSetup();
  }

  private scheduleRestart(why: string): void {
    // Only a server that runs, starts or failed to start is (re)started; one never needed stays unstarted.
    if (!this.client && !this.starting && !this.serverProblem) return;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.serverLog.appendLine(`[stepwise] restarting the server: ${why}`);
      void (async () => {
        if (this.starting) await this.starting.catch(() => undefined);
        this.starting = this.startClient(false).finally(() => (this.starting = undefined));
      })();
    }, 300);
  }

  private execute(client: LanguageClient, command: string, args: unknown[]): Promise<unknown> {
    return client.sendRequest(ExecuteCommandRequest.type, executeCommandParams(command, args));
  }

  private mapLens(lens: vscode.CodeLens): void {
    if (lens.command) {
      const mapped = mapLensCommand(lens.command.command);
      if (mapped && mapped !== lens.command.command) lens.command = { ...lens.command, command: mapped, arguments: [] };
    }
  }

  private async saveDocuments(params: { uris?: string[] }): Promise<{ saved: string[] }> {
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
        this.serverLog.appendLine(`[stepwise] could not save ${uri}: ${String(error)}`);
      }
    }
    return { saved };
  }

  // ---- notifications ------------------------------------------------------------------------------------

  private onPlan(p: PlanParams): void {
    if (!this.plans.update(p)) return;
    this.planUpdates.set(p.workspace, (this.planUpdates.get(p.workspace) ?? 0) + 1);
    this.lastFolder = p.workspace;
    this.updateUi();
    this.refreshLenses();
  }

  /**
   * While VS Code restores editors at start-up it can drop a code lens answer (or never ask), so ask again a
   * few times during the first seconds when there is a plan to show.
   */
  private settleLenses(client: LanguageClient): void {
    for (const delay of [1000, 3000, 7000]) {
      const t = setTimeout(() => {
        if (this.client === client && this.plans.all().some((p) => p.items.length > 0)) this.refreshLenses(0);
      }, delay);
      this.disposables.push({ dispose: () => clearTimeout(t) });
    }
  }

  private lensTimer: NodeJS.Timeout | undefined;
  /**
   * Asks VS Code to fetch the server's code lenses again (as `workspace/codeLens/refresh` does). The server
   * refreshes them on plan changes, but not for the editors VS Code restores while the client starts (after a
   * reload VS Code sometimes never asks, or drops the answer), so the plan's lens would stay missing.
   */
  private refreshLenses(delay = 150): void {
    if (this.lensTimer) clearTimeout(this.lensTimer);
    this.lensTimer = setTimeout(() => {
      this.lensTimer = undefined;
      const feature = this.client?.getFeature(CodeLensRequest.method) as unknown as
        | { getAllProviders?: () => Iterable<{ onDidChangeCodeLensEmitter?: vscode.EventEmitter<void> }> }
        | undefined;
      try {
        for (const p of feature?.getAllProviders?.() ?? []) p.onDidChangeCodeLensEmitter?.fire();
      } catch (error) {
        this.serverLog.appendLine(`[stepwise] code lens refresh failed: ${String(error)}`);
      }
    }, delay);
  }

  private onStatus(p: StatusParams): void {
    if (!p?.workspace) return;
    const prev = this.statuses.get(p.workspace);
    this.statuses.set(p.workspace, p);
    this.lastFolder = p.workspace;
    const name = this.folderName(p.workspace);
    if (p.state === 'running' && (!prev || prev.state === 'idle' || prev.runId !== p.runId)) {
      this.usages.delete(p.workspace);
      this.lastTranscriptFolder = p.workspace;
      this.writer.line('');
      this.writer.line(runStartLine(this.prompts.get(p.workspace), name, p.runId));
    } else if (p.state === 'idle' && prev && prev.state !== 'idle') {
      this.transcriptFolder(p.workspace);
      this.writer.line(runEndLine(p.reason, p.message, this.usages.get(p.workspace), this.plans.get(p.workspace)));
      if (p.reason === 'error') this.showRunError(p.message);
      else if (p.reason === 'loop_detected' || p.reason === 'max_rounds')
        void vscode.window.showWarningMessage(`stepwise: the run stopped (${p.reason.replace('_', ' ')}).`, 'Show Transcript').then((x) => x && this.transcript.show(true));
    }
    this.updateUi();
  }

  private showRunError(message: string | undefined): void {
    const text = `stepwise: the run failed${message ? `: ${message}` : ''}`;
    const looksLikeConfig = /model|api[ _-]?key|unauthori[sz]ed|401|403|base ?url|not configured/i.test(message ?? '');
    const actions = looksLikeConfig ? ['Open Settings', 'Set API Key', 'Show Transcript'] : ['Show Transcript', 'Show Server Log'];
    void vscode.window.showErrorMessage(text, ...actions).then((pick) => {
      if (pick === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'stepwise');
      else if (pick === 'Set API Key') void this.setApiKey();
      else if (pick === 'Show Transcript') this.transcript.show(true);
      else if (pick === 'Show Server Log') this.serverLog.show(true);
    });
  }

  private transcriptFolder(workspace: string | undefined): void {
    if (!workspace || workspace === this.lastTranscriptFolder) return;
    this.lastTranscriptFolder = workspace;
    if ((vscode.workspace.workspaceFolders?.length ?? 0) > 1) this.writer.line(`── ${this.folderName(workspace)}`);
  }

  private folderName(workspace: string): string {
    return workspaceFolderOf(workspace)?.name ?? folderRefs().find((f) => f.uri === workspace)?.name ?? workspace;
  }

  // ---- UI -----------------------------------------------------------------------------------------------

  private updateUi(): void {
    this.tree.refresh();
    this.view.title = this.plans.title(folderRefs());
    const running = [...this.statuses.values()].some((s) => s.state === 'running' || s.state === 'waiting');
    void vscode.commands.executeCommand('setContext', 'stepwise.running', running);
    this.updateStatusBar();
  }

  /** The folder the status bar shows: a busy one (the active editor's first), else the active editor's, else the last active. */
  private statusFolder(): string | undefined {
    const folders = folderRefs();
    const active = folderForUri(folders, vscode.window.activeTextEditor?.document.uri.toString())?.uri;
    const busy = (uri: string | undefined) => {
      const s = uri ? this.statuses.get(uri) : undefined;
      return !!s && (s.state === 'running' || s.state === 'waiting');
    };
    if (busy(active)) return active;
    const anyBusy = [...this.statuses.keys()].find((u) => busy(u));
    if (anyBusy) return anyBusy;
    if (active && (this.statuses.has(active) || this.plans.get(active))) return active;
    return this.lastFolder ?? active ?? folders[0]?.uri;
  }

  private updateStatusBar(): void {
    const item = this.statusItem;
    // Shown once stepwise is in use in this window (its server started, or failed to).
    if (!this.client && !this.serverProblem) {
      item.hide();
      return;
    }
    item.show();
    if (this.serverProblem && !this.client) {
      item.text = '$(error) stepwise: no server';
      item.tooltip = this.serverProblem;
      item.command = EXTENSION_COMMANDS.showServerLog;
      item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      return;
    }
    const ws = this.statusFolder();
    const multi = (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
    const model = statusBarModel(
      ws ? this.statuses.get(ws) : undefined,
      ws ? this.plans.get(ws) : undefined,
      ws ? this.usages.get(ws) : undefined,
      multi && ws ? this.folderName(ws) : undefined,
      ws ? this.compactions.get(ws) : undefined,
    );
    item.text = model.text;
    item.tooltip = model.tooltip;
    item.command = model.command;
    item.accessibilityInformation = { label: model.text.replace(/\$\([^)]*\)\s*/g, '') };
    item.backgroundColor =
      model.severity === 'error'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : model.severity === 'warning'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
  }

  // ---- commands -----------------------------------------------------------------------------------------

  private async pickFolder(candidates?: FolderRef[], placeHolder = 'Which folder?'): Promise<FolderRef | undefined> {
    const folders = folderRefs();
    const choice = chooseFolder(folders, vscode.window.activeTextEditor?.document.uri.toString(), candidates);
    if (choice.kind === 'folder') return choice.folder;
    if (choice.kind === 'none') {
      void vscode.window.showWarningMessage('stepwise: open a folder first; the agent works in a workspace folder.');
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(
      choice.candidates.map((f) => ({ label: f.name, description: workspaceFolderOf(f.uri)?.uri.fsPath, folder: f })),
      { placeHolder },
    );
    return pick?.folder;
  }

  private async runTask(promptArg?: string): Promise<void> {
    const folder = await this.pickFolder(undefined, 'Run the task in which folder?');
    if (!folder) return;
    const wsFolder = workspaceFolderOf(folder.uri);
    if (!wsFolder) return;
    // What is missing, as the server itself sees it (environment, the folder's .env, these settings).
    const server = this.resolveServer();
    if (!server.found) {
      this.showMissingBinary(server);
      return;
    }
    const report = await this.doctor(server, wsFolder);
    const problem = report && doctorProblemMessage(report, effectiveProvider(readSettings(wsFolder).provider, process.env));
    if (report && problem) {
      this.logReport(report);
      await this.showConfigProblem(report, problem);
      return;
    }
    const client = await this.ensureClient(true);
    if (!client) return;
    const prompt =
      promptArg ??
      (await vscode.window.showInputBox({
        title: 'Stepwise: Run Task',
        prompt: `What should the agent do in ${folder.name}?`,
        placeHolder: 'e.g. add input validation to the signup form and test it',
        ignoreFocusOut: true,
        validateInput: validatePrompt,
      }));
    const args = runArguments(prompt, folder.uri);
    if (!args) return;
    this.prompts.set(folder.uri, args[0].prompt);
    try {
      const result = (await this.execute(client, SERVER_COMMANDS.run, args)) as { runId?: string } | null;
      this.serverLog.appendLine(`[stepwise] run ${result?.runId ?? '?'} started in ${folder.name}`);
    } catch (error) {
      void vscode.window.showErrorMessage(`stepwise: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    this.transcript.show(true);
    await this.revealPlanView();
  }

  private async revealPlanView(): Promise<void> {
    if (this.view.visible) return;
    const editor = vscode.window.activeTextEditor;
    await vscode.commands.executeCommand(`${PLAN_VIEW}.focus`);
    if (editor) await vscode.window.showTextDocument(editor.document, { viewColumn: editor.viewColumn, preserveFocus: false });
  }

  private async cancelRun(): Promise<void> {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      void vscode.window.showInformationMessage('stepwise: no run in progress.');
      return;
    }
    const busy = folderRefs().filter((f) => {
      const s = this.statuses.get(f.uri);
      return s && (s.state === 'running' || s.state === 'waiting');
    });
    const folder = await this.pickFolder(busy.length > 0 ? busy : undefined, 'Cancel the run in which folder?');
    if (!folder) return;
    try {
      await this.execute(client, SERVER_COMMANDS.cancel, workspaceArguments(folder.uri));
    } catch (error) {
      void vscode.window.showErrorMessage(`stepwise: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private async newSession(): Promise<void> {
    const client = await this.ensureClient(true);
    if (!client) return;
    const folder = await this.pickFolder(undefined, 'Start a new session in which folder?');
    if (!folder) return;
    try {
      await this.execute(client, SERVER_COMMANDS.reset, workspaceArguments(folder.uri));
      this.plans.update({ workspace: folder.uri, items: [], completed: 0, total: 0 });
      this.usages.delete(folder.uri);
      this.writer.line(`━━ new session in ${folder.name}`);
      this.updateUi();
      void vscode.window.showInformationMessage(`stepwise: new session in ${folder.name}.`);
    } catch (error) {
      void vscode.window.showErrorMessage(`stepwise: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private async showPlan(): Promise<void> {
    await vscode.commands.executeCommand(`${PLAN_VIEW}.focus`);
  }

  private async setApiKey(): Promise<void> {
    const provider = effectiveProvider(readSettings().provider, process.env);
    const value = await vscode.window.showInputBox({
      title: `Stepwise: Set API Key (${provider})`,
      prompt: `The API key for ${provider}. It is kept in VS Code's secret storage and passed to the server's environment; leave empty to remove it.`,
      password: true,
      ignoreFocusOut: true,
      validateInput: validateApiKey,
    });
    if (value === undefined) return;
    const key = secretKeyName(provider);
    if (value.trim() === '') {
      await this.context.secrets.delete(key);
      void vscode.window.showInformationMessage(`stepwise: API key for ${provider} removed.`);
    } else {
      await this.context.secrets.store(key, value.trim());
      const running = this.client || this.starting;
      void vscode.window.showInformationMessage(`stepwise: API key for ${provider} saved${running ? '; restarting the server' : ''}.`);
    }
    this.scheduleRestart('API key changed');
  }

  private disposed = false;

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.lensTimer) clearTimeout(this.lensTimer);
    const client = this.client;
    this.client = undefined;
    for (const d of this.disposables) d.dispose();
    if (client) await client.stop(3000).catch(() => undefined);
  }
}

let instance: Stepwise | undefined;

export function activate(context: vscode.ExtensionContext): void {
  instance = new Stepwise(context);
  context.subscriptions.push({ dispose: () => void instance?.dispose() });
  // No server in windows that do not use stepwise: it starts with a command, the plan view, or here when a
  // folder has a saved session (a stat per folder, no process).
  instance.startIfUsed();
}

export async function deactivate(): Promise<void> {
  const s = instance;
  instance = undefined;
  if (s) await s.dispose();
}
