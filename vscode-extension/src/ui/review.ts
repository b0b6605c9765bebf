// The review view: one webview panel ("Hub: Review") showing job/review's
// packet of every ended job not landed yet, with a Land link per job that
// can land. Hub: Review Ended Jobs opens it; it reads the packet again when
// a job changes while it is open.

import * as vscode from "vscode";

import { Coalesce } from "../model/coalesce";
import { buildReview, renderReview, ReviewCommands } from "../model/review";
import type { Session } from "../model/session";
import { errorText } from "../protocol/errors";
import { Capabilities, Methods, type ReviewResult } from "../protocol/generated";

/** How long to wait after a change before reading again (changes come in bursts). */
const settleMs = 300;

export class ReviewPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private last: ReviewResult | undefined;
  private readonly reread = new Coalesce(settleMs, () => void this.read().catch(() => undefined));
  private readonly subscriptions: { dispose(): void }[];

  constructor(private readonly session: Session, private readonly log: (line: string) => void) {
    this.subscriptions = [
      session.model.onDidChange(() => {
        if (this.panel) {
          this.reread.ask();
        }
      }),
    ];
  }

  dispose(): void {
    this.reread.dispose();
    this.subscriptions.forEach((s) => s.dispose());
    this.panel?.dispose();
  }

  /** show opens (or reveals) the panel and reads the packet now; rejects when the daemon cannot review. */
  async show(): Promise<void> {
    await this.session.need(Capabilities.Land, "review jobs");
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(
        "hub.review",
        "Hub: Review",
        { viewColumn: vscode.ViewColumn.Active },
        { enableScripts: false, enableFindWidget: true, enableCommandUris: [...ReviewCommands] },
      );
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.last = undefined;
      });
    } else {
      this.panel.reveal();
    }
    await this.read();
  }

  private async read(): Promise<void> {
    const panel = this.panel;
    if (!panel) {
      return;
    }
    let problem: string | undefined;
    try {
      this.last = await this.session.request(Methods.JobReview, { all_ended: true });
    } catch (err) {
      problem = this.session.model.connected ? `Could not read the review: ${errorText(err)}` : "Disconnected: this is what was last read.";
      this.log(`review: ${errorText(err)}`);
    }
    if (this.panel !== panel) {
      return;
    }
    const r = this.last ?? { text: "", jobs: [] };
    panel.webview.html = renderReview(buildReview(r, this.session.supports(Capabilities.Land)), panel.webview.cspSource, problem);
  }
}
