// HubClient: one JSON-RPC connection to `hub serve` over its unix socket, with
// LSP framing (vscode-jsonrpc), typed by the generated RequestMap and
// NotificationMap. It knows nothing of jobs or of the editor; reconnecting
// is the session's business (src/model/session.ts).

import * as net from "node:net";
import {
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  type CancellationToken,
  type Message,
  type MessageConnection,
  type MessageWriter,
} from "vscode-jsonrpc/node";

import { ClientErrorCodes, HubError, notRunningHint } from "./errors";
import {
  Methods,
  PROTOCOL_VERSION,
  type ErrorData,
  type InitializeResult,
  type NotificationMap,
  type RequestMap,
} from "./generated";
import { checkProtocol } from "./version";

export type Method = keyof RequestMap;
export type Params<M extends Method> = RequestMap[M][0];
export type Result<M extends Method> = RequestMap[M][1];
export type Notification = keyof NotificationMap;

/** Disposable is anything that can be undone: a handler registration. */
export interface Disposable {
  dispose(): void;
}

export interface ConnectOptions {
  /** Reported in initialize. */
  clientName?: string;
  clientVersion?: string;
  /** The protocol version this client speaks (default PROTOCOL_VERSION). */
  protocolVersion?: string;
  /** Bounds the dial and the initialize round trip (default 5000 ms). */
  timeoutMs?: number;
}

/** toHubError turns whatever a request failed with into a HubError. */
export function toHubError(err: unknown): HubError {
  if (err instanceof HubError) {
    return err;
  }
  if (err instanceof ResponseError) {
    if (err.code === -32097 /* PendingResponseRejected */) {
      return new HubError(ClientErrorCodes.ConnectionClosed, "the hub daemon went away before it answered", {
        hint: "The request may or may not have been done; check the job before trying again.",
      });
    }
    const data = (err.data ?? {}) as ErrorData;
    return new HubError(err.code, err.message, typeof data === "object" && data !== null ? data : {});
  }
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOENT" || code === "ECONNREFUSED") {
    return new HubError(ClientErrorCodes.DaemonAbsent, "hub is not running", { hint: notRunningHint });
  }
  if (err instanceof Error && /Connection is (closed|disposed)/.test(err.message)) {
    return new HubError(ClientErrorCodes.ConnectionClosed, "the connection to the hub daemon is closed");
  }
  return new HubError(ClientErrorCodes.ConnectionClosed, err instanceof Error ? err.message : String(err));
}

/** dial opens the unix socket, or fails with DaemonAbsent when nothing answers. */
export function dial(socket: string, timeoutMs = 5000): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(socket);
    const timer = setTimeout(() => {
      s.destroy();
      reject(new HubError(ClientErrorCodes.DaemonAbsent, `no answer on ${socket} within ${timeoutMs} ms`));
    }, timeoutMs);
    s.once("connect", () => {
      clearTimeout(timer);
      s.removeAllListeners("error");
      resolve(s);
    });
    s.once("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      s.destroy();
      if (err.code === "ENOENT" || err.code === "ECONNREFUSED") {
        reject(new HubError(ClientErrorCodes.DaemonAbsent, `hub is not running (nothing answers on ${socket})`, {
          hint: notRunningHint,
        }));
      } else {
        reject(new HubError(ClientErrorCodes.DaemonAbsent, `cannot connect to ${socket}: ${err.message}`));
      }
    });
  });
}

/**
 * SocketWriter writes messages until the socket is gone, then drops them.
 * vscode-jsonrpc rethrows a failed request write from inside a promise
 * executor, where nothing can catch it (an unhandled rejection); a dropped
 * write instead leaves the request pending until the connection is disposed,
 * which rejects it with PendingResponseRejected.
 */
class SocketWriter implements MessageWriter {
  private readonly inner: StreamMessageWriter;
  readonly onError: MessageWriter["onError"];
  readonly onClose: MessageWriter["onClose"];

  constructor(private readonly socket: net.Socket, private readonly failed: () => void) {
    this.inner = new StreamMessageWriter(socket);
    this.onError = this.inner.onError;
    this.onClose = this.inner.onClose;
  }

  async write(msg: Message): Promise<void> {
    if (this.socket.destroyed || !this.socket.writable) {
      return;
    }
    try {
      await this.inner.write(msg);
    } catch {
      this.failed();
    }
  }

  end(): void {
    this.inner.end();
  }

  dispose(): void {
    this.inner.dispose();
  }
}

/**
 * HubClient is a connected, initialized session with the daemon. Requests
 * may run concurrently; notifications are delivered in the order the daemon
 * sent them. Once closed it stays closed: make a new one to reconnect.
 */
export class HubClient {
  private closedFlag = false;
  private readonly closeHandlers = new Set<(err?: Error) => void>();

  private constructor(
    private readonly conn: MessageConnection,
    private readonly socket: net.Socket,
    /** What the daemon said in initialize; set by connect. */
    public info: InitializeResult,
  ) {}

  /**
   * connect dials the socket, runs initialize and checks the protocol
   * version. Rejects with a HubError: DaemonAbsent when nothing answers,
   * VersionMismatch when the daemon speaks another protocol.
   */
  static async connect(socketPath: string, o: ConnectOptions = {}): Promise<HubClient> {
    const timeoutMs = o.timeoutMs ?? 5000;
    const sock = await dial(socketPath, timeoutMs);
    let c: HubClient | undefined;
    const conn = createMessageConnection(new StreamMessageReader(sock), new SocketWriter(sock, () => c?.close()));
    c = new HubClient(conn, sock, undefined as unknown as InitializeResult);
    conn.onClose(() => c.handleClose());
    sock.on("close", () => c.handleClose());
    sock.on("error", () => c.handleClose());
    conn.listen();
    const mine = o.protocolVersion ?? PROTOCOL_VERSION;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new HubError(ClientErrorCodes.DaemonAbsent, `the hub daemon did not answer initialize within ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
      c.info = await Promise.race([
        c.request(Methods.Initialize, {
          client_name: o.clientName ?? "hub-vscode",
          client_version: o.clientVersion ?? "",
          protocol_version: mine,
        }),
        timeout,
      ]);
    } catch (err) {
      c.close();
      throw toHubError(err);
    } finally {
      clearTimeout(timer);
    }
    const mismatch = checkProtocol(c.info.protocol_version, mine);
    if (mismatch) {
      c.close();
      throw mismatch;
    }
    return c;
  }

  /** closed reports whether the connection has ended. */
  get closed(): boolean {
    return this.closedFlag;
  }

  /** request sends one typed request; failures reject with a HubError. */
  async request<M extends Method>(method: M, params: Params<M>, token?: CancellationToken): Promise<Result<M>> {
    if (this.closedFlag) {
      throw new HubError(ClientErrorCodes.ConnectionClosed, "the connection to the hub daemon is closed");
    }
    try {
      // vscode-jsonrpc sends an array when given more than one argument: pass
      // the token only when there is one, so params go by name.
      const r = token ? await this.conn.sendRequest(method, params, token) : await this.conn.sendRequest(method, params);
      return r as Result<M>;
    } catch (err) {
      throw toHubError(err);
    }
  }

  /** onNotification registers the handler of one notification. */
  onNotification<N extends Notification>(method: N, handler: (params: NotificationMap[N]) => void): Disposable {
    return this.conn.onNotification(method, (params: unknown) => handler(params as NotificationMap[N]));
  }

  /** onClose calls handler once, when the connection ends for whatever reason. */
  onClose(handler: () => void): Disposable {
    if (this.closedFlag) {
      queueMicrotask(handler);
      return { dispose() {} };
    }
    this.closeHandlers.add(handler);
    return { dispose: () => this.closeHandlers.delete(handler) };
  }

  /** close ends the connection; pending requests reject with ConnectionClosed. */
  close(): void {
    this.handleClose();
  }

  private handleClose(): void {
    if (this.closedFlag) {
      return;
    }
    this.closedFlag = true;
    this.conn.dispose(); // rejects the pending requests
    this.socket.destroy();
    for (const h of [...this.closeHandlers]) {
      try {
        h();
      } catch {
        // a handler's failure must not stop the others
      }
    }
    this.closeHandlers.clear();
  }
}
