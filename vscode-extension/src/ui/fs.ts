// The read-only file system behind hub-job: URIs: a job's files at its base
// commit or its branch's head, read with job/file. A path absent at that
// revision reads as an empty file, so a diff shows an empty side.

import * as vscode from "vscode";

import { errorText, isHubError } from "../protocol/errors";
import { Encodings, ErrorCodes, Methods, Revisions, type FileResult } from "../protocol/generated";
import type { Session } from "../model/session";
import { parseJobFileUri } from "./uris";

interface Cached {
  at: number;
  file: FileResult;
  bytes: Uint8Array;
}

/** How long a read is reused (a diff editor stats, then reads, the same file). */
const cacheMs = 2000;

export class JobFileSystem implements vscode.FileSystemProvider {
  private readonly changeEmitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changeEmitter.event;

  private readonly cache = new Map<string, Cached>();
  /** Head URIs read so far, by job, to tell the editor when a job's head moved. */
  private readonly heads = new Map<string, Set<string>>();
  private readonly cursors = new Map<string, number>();
  private readonly subscription: { dispose(): void };

  constructor(private readonly session: Session) {
    this.subscription = session.model.onDidChange((e) => {
      for (const id of e.changed) {
        this.jobChanged(id);
      }
    });
  }

  dispose(): void {
    this.subscription.dispose();
    this.changeEmitter.dispose();
  }

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    const c = await this.read(uri);
    return {
      type: vscode.FileType.File,
      ctime: 0,
      mtime: c.at,
      size: c.bytes.byteLength,
      permissions: vscode.FilePermission.Readonly,
    };
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    return (await this.read(uri)).bytes;
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  writeFile(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  private async read(uri: vscode.Uri): Promise<Cached> {
    const p = parseJobFileUri(uri);
    if (!p) {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    const key = uri.toString();
    const hit = this.cache.get(key);
    if (hit && Date.now() - hit.at < cacheMs) {
      return hit;
    }
    let file: FileResult;
    try {
      // The URI's "head" is the branch's tip now: the protocol's "tip".
      const rev = p.rev === "head" ? Revisions.Tip : Revisions.Base;
      file = await this.session.request(Methods.JobFile, { id: p.id, rev, path: p.path });
    } catch (err) {
      if (isHubError(err, ErrorCodes.NotFound)) {
        throw vscode.FileSystemError.FileNotFound(uri);
      }
      throw vscode.FileSystemError.Unavailable(errorText(err));
    }
    const bytes = !file.exists
      ? new Uint8Array()
      : file.encoding === Encodings.Base64
        ? new Uint8Array(Buffer.from(file.content, "base64"))
        : new TextEncoder().encode(file.content);
    const c = { at: Date.now(), file, bytes };
    this.cache.set(key, c);
    if (p.rev === "head") {
      const set = this.heads.get(p.id) ?? new Set<string>();
      set.add(key);
      this.heads.set(p.id, set);
      if (!this.cursors.has(p.id)) {
        this.cursors.set(p.id, this.session.model.get(p.id)?.cursor ?? 0);
      }
    }
    return c;
  }

  private jobChanged(id: string): void {
    const j = this.session.model.get(id);
    const uris = this.heads.get(id);
    if (!j || !uris) {
      return;
    }
    const before = this.cursors.get(id);
    this.cursors.set(id, j.cursor);
    if (before === j.cursor) {
      return;
    }
    const events: vscode.FileChangeEvent[] = [];
    for (const key of uris) {
      this.cache.delete(key);
      events.push({ type: vscode.FileChangeType.Changed, uri: vscode.Uri.parse(key) });
    }
    this.changeEmitter.fire(events);
  }
}
