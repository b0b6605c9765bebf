// The hub extension: a live view of hub's jobs over the daemon's socket.
// Everything is registered here and pushed into the context's disposables.

import * as vscode from "vscode";

import * as fmt from "./model/format";
import { Session } from "./model/session";
import { ClientErrorCodes } from "./protocol/errors";
import { Capabilities } from "./protocol/generated";
import { hubBinary, hubHome } from "./protocol/paths";
import { registerCommands } from "./ui/commands";
import { JobDetails } from "./ui/details";
import { JobFileSystem } from "./ui/fs";
import { JobLogs } from "./ui/logs";
import { Questions } from "./ui/questions";
import { ReviewPanel } from "./ui/review";
import { StatusBar } from "./ui/status";
import { JobsTree } from "./ui/tree";
import { Scheme } from "./ui/uris";

export function activate(context: vscode.ExtensionContext): void {
  const out = vscode.window.createOutputChannel("Hub");
  const log = (line: string) => out.appendLine(`${new Date().toISOString()} ${line}`);
  const config = () => vscode.workspace.getConfiguration("hub");

  const session = new Session({
    home: () => hubHome(config().get<string>("home")),
    binary: () => hubBinary(config().get<string>("binary")),
    autoStart: () => config().get<boolean>("autoStart", true),
    clientName: "hub-vscode",
    clientVersion: String(context.extension.packageJSON.version ?? ""),
    log,
  });
  const tree = new JobsTree(session);
  const view = vscode.window.createTreeView("hub.jobs", { treeDataProvider: tree, showCollapseAll: true });
  const fs = new JobFileSystem(session);
  const questions = new Questions(session);
  const logs = new JobLogs(session);
  const status = new StatusBar(session);
  const details = new JobDetails(session, log);
  const review = new ReviewPanel(session, log);

  const updateView = () => {
    const n = session.model.counts().needsInput;
    view.badge = n > 0 ? { value: n, tooltip: fmt.badgeTooltip(n) } : undefined;
    if (session.state === "connected") {
      view.message = undefined;
    } else if (session.lastError) {
      view.message = session.model.size > 0 ? `Disconnected (last known jobs). ${session.lastError.display()}` : session.lastError.display();
    } else {
      view.message = session.state === "connecting" ? "Connecting to hub…" : "hub: disconnected; reconnecting…";
    }
    void vscode.commands.executeCommand("setContext", "hub:connected", session.state === "connected");
    // The menus offer Land (and keep Merge in the context menu) when the daemon lands jobs.
    void vscode.commands.executeCommand("setContext", "hub:canLand", session.supports(Capabilities.Land));
  };

  context.subscriptions.push(
    out,
    session,
    tree,
    view,
    fs,
    questions,
    logs,
    status,
    details,
    review,
    vscode.workspace.registerFileSystemProvider(Scheme.JobFile, fs, { isReadonly: true, isCaseSensitive: true }),
    ...registerCommands({ session, tree, questions, logs, details, review, log }),
    session.model.onDidChange(updateView),
    session.onDidChangeState(updateView),
    session.onDidFail((e) => {
      updateView();
      if (e.code === ClientErrorCodes.DaemonAbsent) {
        // The action first: a collapsed toast shows one line.
        showUntilConnected(`${e.message}: [Start Hub](command:hub.startHub).${e.hint ? ` ${e.hint}` : ""}`);
      } else {
        void vscode.window.showErrorMessage(`Hub: ${e.display()}`);
      }
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("hub.home") || e.affectsConfiguration("hub.binary")) {
        log("settings changed; reconnecting");
        void session.reconnect();
      }
    }),
  );
  updateView();
  void session.start();

  // showUntilConnected shows text as a notification that goes away by
  // itself once the session connects (a plain message would outlive the
  // problem it reports). A progress notification takes no buttons, but its
  // text renders [label](command:…) links: the Start Hub action is one.
  let waiting = false;
  function showUntilConnected(text: string): void {
    if (waiting) {
      return;
    }
    waiting = true;
    void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: text }, () =>
      new Promise<void>((resolve) => {
        const sub = session.onDidChangeState((st) => {
          if (st === "connected") {
            sub.dispose();
            waiting = false;
            resolve();
          }
        });
        context.subscriptions.push(sub);
      }),
    );
  }
}

export function deactivate(): void {
  // Everything is in the context's disposables.
}
