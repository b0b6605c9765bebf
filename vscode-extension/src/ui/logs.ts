// Job logs: one output channel "Hub: <id>" per job asked for, filled from
// job/events (cursor 0 on) and then following the job/event notifications.
// After a reconnect it reads what it missed from its last cursor.

import * as vscode from "vscode";

import type { Session } from "../model/session";
import { errorText } from "../protocol/errors";
import { Methods, type Event } from "../protocol/generated";

interface Log {
  channel: vscode.OutputChannel;
  cursor: number;
  /** Live events that came while the journal was being read. */
  buffer: Event[] | undefined;
}

function time(at: string): string {
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? at : d.toISOString().slice(11, 23);
}

/** eventLine renders one journal event as a line of the job's log. */
export function eventLine(ev: Event): string {
  let rest = ev.text ?? "";
  if (ev.data !== undefined && ev.data !== null) {
    const d = ev.data as Record<string, unknown>;
    if (ev.kind === "question" && typeof d.text === "string") {
      rest = rest || d.text;
    } else {
      const json = JSON.stringify(ev.data);
      rest = rest ? `${rest} ${json}` : json;
    }
  }
  return `${time(ev.at)} ${ev.kind.padEnd(9)} ${rest}`.trimEnd();
}

export class JobLogs implements vscode.Disposable {
  private readonly logs = new Map<string, Log>();
  private readonly subscriptions: { dispose(): void }[];

  constructor(private readonly session: Session) {
    this.subscriptions = [
      session.onDidReceiveEvent((ev) => this.live(ev)),
      session.onDidChangeState((s) => {
        if (s === "connected") {
          for (const id of this.logs.keys()) {
            void this.catchUp(id);
          }
        }
      }),
    ];
  }

  dispose(): void {
    this.subscriptions.forEach((s) => s.dispose());
    for (const l of this.logs.values()) {
      l.channel.dispose();
    }
    this.logs.clear();
  }

  /** show opens (creating if needed) the log of a job. */
  async show(id: string): Promise<void> {
    let l = this.logs.get(id);
    if (l) {
      l.channel.show(true);
      return;
    }
    l = { channel: vscode.window.createOutputChannel(`Hub: ${id}`), cursor: 0, buffer: undefined };
    this.logs.set(id, l);
    l.channel.show(true);
    await this.catchUp(id);
  }

  private live(ev: Event): void {
    const l = this.logs.get(ev.job_id);
    if (!l) {
      return;
    }
    if (l.buffer) {
      l.buffer.push(ev);
      return;
    }
    this.append(l, ev);
  }

  private append(l: Log, ev: Event): void {
    if (ev.cursor <= l.cursor) {
      return;
    }
    l.cursor = ev.cursor;
    l.channel.appendLine(eventLine(ev));
  }

  private async catchUp(id: string): Promise<void> {
    const l = this.logs.get(id);
    if (!l || l.buffer) {
      return;
    }
    l.buffer = [];
    try {
      for (;;) {
        const r = await this.session.request(Methods.JobEvents, { id, since: l.cursor, limit: 500 });
        for (const ev of r.events ?? []) {
          this.append(l, ev);
        }
        if ((r.events ?? []).length < 500) {
          break;
        }
      }
    } catch (err) {
      l.channel.appendLine(`(could not read the journal: ${errorText(err)})`);
    } finally {
      const buffered = l.buffer ?? [];
      l.buffer = undefined;
      for (const ev of buffered) {
        this.append(l, ev);
      }
    }
  }
}
