// Worker questions: a notification when one arrives, and the input box that
// sends the answer with job/reply.

import * as vscode from "vscode";

import * as fmt from "../model/format";
import type { Session } from "../model/session";
import { errorText } from "../protocol/errors";
import { Methods } from "../protocol/generated";

export class Questions implements vscode.Disposable {
  private readonly subscription: { dispose(): void };

  constructor(private readonly session: Session) {
    this.subscription = session.model.onDidAskQuestion((p) => {
      void vscode.window
        .showInformationMessage(`Hub job ${p.jobId} asks: ${p.question.text}`, "Answer")
        .then((choice) => {
          if (choice === "Answer") {
            void this.answer(p.jobId);
          }
        });
    });
  }

  dispose(): void {
    this.subscription.dispose();
  }

  /**
   * answer asks for the answer to a job's pending question and sends it.
   * Without a job id it offers the jobs that need input.
   */
  async answer(jobId?: string): Promise<void> {
    const model = this.session.model;
    if (!jobId) {
      const pending = model.pending();
      if (pending.length === 0) {
        void vscode.window.showInformationMessage("No hub job needs input.");
        return;
      }
      if (pending.length === 1) {
        jobId = pending[0].jobId;
      } else {
        const pick = await vscode.window.showQuickPick(
          pending.map((p) => ({ label: p.question.text, description: p.jobId, jobId: p.jobId })),
          { placeHolder: "Which question to answer?" },
        );
        if (!pick) {
          return;
        }
        jobId = pick.jobId;
      }
    }
    const q = model.question(jobId);
    if (!q) {
      void vscode.window.showInformationMessage(`Hub job ${jobId} has no pending question.`);
      return;
    }
    const text = await vscode.window.showInputBox({
      title: `Hub job ${jobId}`,
      prompt: q.text,
      placeHolder: `Answer for job ${jobId}`,
      ignoreFocusOut: true,
    });
    if (text === undefined) {
      return;
    }
    try {
      await this.session.act(Methods.JobReply, { id: jobId, question_id: q.id, text });
      vscode.window.setStatusBarMessage(fmt.answerSent(jobId), fmt.transientMs);
    } catch (err) {
      void vscode.window.showErrorMessage(`Hub: could not answer job ${jobId}: ${errorText(err)}`);
    }
  }
}
