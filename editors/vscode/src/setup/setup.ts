// Finding the server and checking the configuration as the server reads it (`stepwise doctor --json`), the
// API key in VS Code's secret storage, and how setup problems are shown.
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as vscode from 'vscode';

import { Core, pickFolder, readSettings, workspaceFolderOf } from './core';
import {
  bundledServerPath,
  doctorArgs,
  doctorProblemMessage,
  doctorReportLines,
  effectiveProvider,
  missingBinaryMessage,
  parseDoctorReport,
  resolveServerCommand,
  secretKeyName,
  serverEnv,
  sessionFile,
  stateDir,
  type DoctorReport,
  type ServerCommand,
} from './settings';
import { validateApiKey } from '../model/commands';
import type { Display } from './core';

function isFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The folders of the window that have a session the server saved (it restores them when it starts). */
export function foldersWithSession(): string[] {
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

/** The context key the plan view's "needs a model" text shows under (package.json `viewsWelcome`). */
export const MODEL_MISSING = 'stepwise.modelMissing';

export class Setup {
  private sandboxWarned = false;
  /** Per folder uri: whether the server's last report found no model or no key for it. */
  private readonly missing = new Map<string, boolean>();
  private checks = 0;

  constructor(
    private readonly core: Core,
    private readonly ui: Display,
    /** Restarts a server that runs (or failed to start) so it reads a changed key. */
    private readonly restart: (why: string) => void,
  ) {}

  /** `stepwise.serverPath`, else the server in this extension's package, else PATH. */
  resolveServer(): ServerCommand {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const bundled = bundledServerPath(this.core.context.extensionPath);
    // A package unpacked without the executable bit (some unzip paths drop it) still works.
    try {
      if (fs.statSync(bundled).isFile()) fs.accessSync(bundled, fs.constants.X_OK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EACCES') fs.chmodSync(bundled, 0o755);
    }
    return resolveServerCommand(readSettings().serverPath, process.env, isFile, { baseDir: folders[0]?.uri.fsPath, bundled });
  }

  showMissingBinary(server: ServerCommand): void {
    this.core.serverProblem = missingBinaryMessage(server.where);
    this.core.log(this.core.serverProblem);
    this.ui.updateStatusBar();
    void vscode.window.showErrorMessage(this.core.serverProblem, 'Open Settings', 'Show Server Log').then((pick) => {
      if (pick === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'stepwise.serverPath');
      else if (pick === 'Show Server Log') this.core.serverLog.show();
    });
  }

  /** The server did not start: say so, and put the server's own report of the configuration in its log. */
  serverFailed(msg: string): void {
    this.core.log(msg);
    this.core.serverProblem = msg;
    this.ui.updateStatusBar();
    void vscode.window.showErrorMessage(msg, 'Check Setup', 'Show Server Log').then((p) => {
      if (p === 'Check Setup') void this.checkSetup();
      else if (p) this.core.serverLog.show();
    });
    const folder = vscode.workspace.workspaceFolders?.[0];
    const server = this.resolveServer();
    if (folder && server.found) void this.doctor(server, folder).then((r) => r && this.logReport(r));
  }

  /** What keeps a run in `folder` from reaching the model, shown to the user; true when nothing does. */
  async readyToRun(folder: vscode.WorkspaceFolder): Promise<boolean> {
    // What is missing, as the server itself sees it (environment, the folder's .env, these settings).
    const server = this.resolveServer();
    if (!server.found) {
      this.showMissingBinary(server);
      return false;
    }
    const report = await this.doctor(server, folder);
    const problem = report && doctorProblemMessage(report, effectiveProvider(readSettings(folder).provider, process.env));
    if (report && problem) {
      this.logReport(report);
      await this.showConfigProblem(report, problem);
      return false;
    }
    // Said once per window: commands then ask one by one (the server says so too, once per session).
    if (report?.sandbox?.available === false && !this.sandboxWarned) {
      this.sandboxWarned = true;
      void vscode.window.showWarningMessage(`stepwise: the sandbox cannot start here (${report.sandbox.reason ?? 'unknown'}); every shell command asks for approval.`);
    }
    return true;
  }

  /**
   * `stepwise doctor --json` for a folder: the configuration as the server reads it (its environment with the
   * key from the secret storage, the folder's `.env`, these settings). `undefined` when it gave no report.
   */
  private async doctor(server: ServerCommand, folder: vscode.WorkspaceFolder): Promise<DoctorReport | undefined> {
    const settings = readSettings(folder);
    const provider = effectiveProvider(settings.provider, process.env);
    const secret = await this.core.context.secrets.get(secretKeyName(provider));
    const args = doctorArgs(folder.uri.fsPath, settings);
    return new Promise((resolve) => {
      execFile(
        server.command,
        args,
        { env: serverEnv(process.env, provider, secret), cwd: folder.uri.fsPath, timeout: 15000 },
        (error, stdout, stderr) => {
          const report = parseDoctorReport(stdout);
          if (!report) this.core.log(`[stepwise] ${server.command} doctor gave no report: ${error?.message ?? ''} ${stderr}`);
          else this.noteMissing(folder.uri.toString(), report.missing.length > 0);
          resolve(report);
        },
      );
    });
  }

  /**
   * Asks the server (`stepwise doctor`, one per folder) whether a model and a key are configured anywhere it
   * looks (settings, environment, `.env`), so the plan view says "needs a model" only when one is missing;
   * never from a guess of the extension's own. A later check wins over one still running.
   */
  async checkModel(): Promise<void> {
    const check = ++this.checks;
    const server = this.resolveServer();
    if (!server.found) return;
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      if (check !== this.checks) return;
      await this.doctor(server, folder);
    }
    const open = new Set((vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString()));
    for (const uri of [...this.missing.keys()]) if (!open.has(uri)) this.missing.delete(uri);
    this.publishMissing();
    const missing = [...this.missing.values()].some((m) => m);
    this.core.log(`[stepwise] model check: ${missing ? 'no model or no API key for a folder' : 'a model and an API key for every folder'}`);
  }

  private noteMissing(folder: string, missing: boolean): void {
    this.missing.set(folder, missing);
    this.publishMissing();
  }

  private publishMissing(): void {
    void vscode.commands.executeCommand('setContext', MODEL_MISSING, [...this.missing.values()].some((m) => m));
  }

  private logReport(r: DoctorReport): void {
    for (const line of doctorReportLines(r)) this.core.log(line);
  }

  /** Stepwise: Check Setup: the server's report of the configuration, in the server log, and a summary. */
  async checkSetup(): Promise<void> {
    const folder = await pickFolder(undefined, 'Check the setup of which folder?');
    const wsFolder = folder && workspaceFolderOf(folder.uri);
    if (!wsFolder) return;
    const server = this.resolveServer();
    this.core.log(`[stepwise] server: ${server.where}${server.found ? '' : ' (not found)'}`);
    if (!server.found) {
      this.showMissingBinary(server);
      return;
    }
    const report = await this.doctor(server, wsFolder);
    this.core.serverLog.show(true);
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

  async setApiKey(): Promise<void> {
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
    const secrets = this.core.context.secrets;
    if (value.trim() === '') {
      await secrets.delete(key);
      void vscode.window.showInformationMessage(`stepwise: API key for ${provider} removed.`);
    } else {
      await secrets.store(key, value.trim());
      const running = this.core.client || this.core.starting;
      void vscode.window.showInformationMessage(`stepwise: API key for ${provider} saved${running ? '; restarting the server' : ''}.`);
    }
    this.restart('API key changed');
  }
}
