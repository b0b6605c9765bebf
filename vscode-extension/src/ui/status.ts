// The status-bar item: jobs running, jobs needing input, the month's spend;
// "disconnected" while no daemon answers. Clicking it focuses the Jobs view.

import * as vscode from "vscode";

import * as fmt from "../model/format";
import type { Session } from "../model/session";

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("hub.status", vscode.StatusBarAlignment.Left, 100);
  private readonly subscriptions: { dispose(): void }[];

  constructor(private readonly session: Session) {
    this.item.name = "Hub";
    this.item.command = "hub.jobs.focus";
    this.subscriptions = [
      session.model.onDidChange(() => this.update()),
      session.onDidChangeState(() => this.update()),
      session.onDidChangeSummary(() => this.update()),
    ];
    this.update();
    this.item.show();
  }

  dispose(): void {
    this.subscriptions.forEach((s) => s.dispose());
    this.item.dispose();
  }

  private update(): void {
    if (this.session.state !== "connected") {
      this.item.text = fmt.disconnectedText;
      const why = this.session.lastError?.display();
      this.item.tooltip = `${why ? `hub: disconnected\n${why}` : "hub: disconnected; reconnecting"}\nClick to start hub.`;
      this.item.command = "hub.startHub";
      return;
    }
    this.item.command = "hub.jobs.focus";
    const c = this.session.model.counts();
    this.item.text = fmt.statusText(c, this.session.summary?.spent_usd ?? 0);
    this.item.tooltip = fmt.statusTooltip(c, this.session.summary);
  }
}
