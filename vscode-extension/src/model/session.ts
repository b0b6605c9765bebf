// Session: the link between one daemon and the JobModel. On every (re)connect:
// initialize (version checked), events/subscribe, job/list → replace the
// model's jobs by id. When the daemon goes away the model keeps the last
// known jobs, marked disconnected, and the session retries with backoff
// (250 ms doubling to 5 s). No vscode import: unit tests drive it in Node.

import { HubClient, type Method, type Params, type Result } from "../protocol/client";
import { daemonUp, notRunning } from "../protocol/daemon";
import { ClientErrorCodes, HubError, isHubError } from "../protocol/errors";
import { ErrorCodes, Methods, Notifications, type Event, type SummaryResult } from "../protocol/generated";
import { socketPath } from "../protocol/paths";
import { Coalesce } from "./coalesce";
import { Emitter, type Disposable } from "./emitter";
import { JobModel } from "./jobs";

export interface SessionOptions {
  /** hub's home folder, read at every connect (settings may change). */
  home(): string;
  /** The binary that runs `hub serve`. */
  binary(): string;
  /** Whether to start a daemon when none answers. */
  autoStart(): boolean;
  /** The environment a started daemon gets (default process.env). */
  env?: NodeJS.ProcessEnv;
  clientName?: string;
  clientVersion?: string;
  /** The protocol this client speaks (default the generated PROTOCOL_VERSION). */
  protocolVersion?: string;
  /** Where the session's own log lines go (never a protocol stream). */
  log?(line: string): void;
  /** Reconnect backoff: first delay and cap, in ms (default 250 and 5000). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** How many jobs job/list returns (default 500). */
  listLimit?: number;
}

export type SessionState = "connecting" | "connected" | "disconnected";

/**
 * Session owns at most one HubClient at a time. Its methods may be called
 * at any moment; connection attempts never overlap.
 */
export class Session {
  readonly model = new JobModel();

  private client: HubClient | undefined;
  private stateValue: SessionState = "disconnected";
  private attempt: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay: number;
  private readonly summaryRead = new Coalesce(150, () => void this.refreshSummary());
  private disposed = false;

  /** The capabilities of the daemon connected last. */
  private capabilities: ReadonlySet<string> = new Set();

  /** The last connect failure, cleared on success. */
  lastError: HubError | undefined;
  /** The last hub/summary answer. */
  summary: SummaryResult | undefined;

  private readonly stateEmitter = new Emitter<SessionState>();
  private readonly eventEmitter = new Emitter<Event>();
  private readonly summaryEmitter = new Emitter<SummaryResult>();
  private readonly errorEmitter = new Emitter<HubError>();

  /** Fires when the connection state changes. */
  readonly onDidChangeState = this.stateEmitter.event;
  /** Fires for every job/event notification, in cursor order. */
  readonly onDidReceiveEvent = this.eventEmitter.event;
  /** Fires after each hub/summary answer. */
  readonly onDidChangeSummary = this.summaryEmitter.event;
  /** Fires when a connect attempt fails (once per distinct message in a row). */
  readonly onDidFail = this.errorEmitter.event;

  constructor(private readonly o: SessionOptions) {
    this.retryDelay = this.initialDelay;
  }

  get state(): SessionState {
    return this.stateValue;
  }

  /** info is what the daemon said in initialize, while connected. */
  get info() {
    return this.client?.info;
  }

  /**
   * supports reports whether the daemon offers a capability (one of
   * Capabilities): the one connected now, else the one last connected to
   * (false before any connection).
   */
  supports(capability: string): boolean {
    return this.capabilities.has(capability);
  }

  /**
   * need is for a command that uses a capability: it connects when
   * disconnected (as act does), then rejects with a HubError saying what
   * to do when the daemon does not offer it.
   */
  async need(capability: string, what: string): Promise<void> {
    if (!this.client || this.client.closed) {
      this.retryDelay = this.initialDelay;
      await this.connectNow(true);
    }
    if (!this.client || this.client.closed) {
      throw this.lastError ?? new HubError(ClientErrorCodes.ConnectionClosed, "hub is disconnected");
    }
    if (!this.supports(capability)) {
      const v = this.client.info.server_version;
      throw new HubError(ErrorCodes.MethodNotFound, `this hub daemon${v ? ` (${v})` : ""} cannot ${what}: it lacks the "${capability}" capability`, {
        hint: "Update hub, then restart its daemon (hub shutdown; any hub command starts it again).",
      });
    }
  }

  /**
   * start connects for the first time, starting a daemon when none answers
   * and autoStart is on. It resolves after the first attempt, whatever its
   * outcome; failures are retried with backoff.
   */
  start(): Promise<void> {
    return this.connectNow(true);
  }

  /**
   * connectNow makes a connect attempt at once (or joins the one in flight).
   * With allowStart, a missing daemon is started when autoStart is on;
   * background retries never start one, so a daemon stopped on purpose
   * stays stopped until the user acts.
   */
  connectNow(allowStart: boolean): Promise<void> {
    if (this.disposed) {
      return Promise.resolve();
    }
    if (this.attempt) {
      return this.attempt;
    }
    this.clearRetry();
    if (this.client && !this.client.closed) {
      return Promise.resolve();
    }
    this.attempt = this.connectOnce(allowStart).finally(() => (this.attempt = undefined));
    return this.attempt;
  }

  /**
   * startHub is the user asking for a daemon: it starts `<binary> serve`
   * when none answers (whatever autoStart says: this is the user's own
   * request, and a daemon stopped on purpose may be started again by hand)
   * and connects. Rejects with the HubError that kept it from connecting.
   */
  async startHub(): Promise<void> {
    await this.attempt?.catch(() => undefined);
    if (this.client && !this.client.closed) {
      return;
    }
    this.clearRetry();
    this.retryDelay = this.initialDelay;
    try {
      await daemonUp({ home: this.o.home(), binary: this.o.binary(), autoStart: true, env: this.o.env });
    } catch (err) {
      this.scheduleRetry();
      throw err;
    }
    await this.connectNow(false);
    if (this.state !== "connected") {
      throw this.lastError ?? new HubError(ClientErrorCodes.ConnectionClosed, "hub started but did not answer");
    }
  }

  /** reconnect drops the connection (if any) and connects again, e.g. after the home setting changed. */
  async reconnect(): Promise<void> {
    await this.attempt?.catch(() => undefined);
    const c = this.client;
    this.client = undefined;
    c?.close();
    this.model.replaceAll([]);
    this.retryDelay = this.initialDelay;
    await this.connectNow(true);
  }

  /**
   * refresh re-reads the job list and the summary when connected, or
   * connects (starting a daemon if allowed) when not.
   */
  async refresh(): Promise<void> {
    if (!this.client || this.client.closed) {
      this.retryDelay = this.initialDelay;
      await this.connectNow(true);
      return;
    }
    const c = this.client;
    this.model.beginSync();
    const list = await c.request(Methods.JobList, { limit: this.o.listLimit ?? 500 });
    if (c === this.client) {
      this.model.replaceAll(list.jobs ?? []);
    }
    await this.refreshSummary();
  }

  /**
   * request sends one request on the current connection. While disconnected
   * it fails at once (with the last connect error): reads the views make on
   * their own never start a daemon. Rejects with a HubError.
   */
  async request<M extends Method>(method: M, params: Params<M>): Promise<Result<M>> {
    const c = this.client;
    if (!c || c.closed) {
      throw this.lastError ?? new HubError(ClientErrorCodes.ConnectionClosed, "hub is disconnected");
    }
    return c.request(method, params);
  }

  /**
   * act is request for what the user asked for (a command): when
   * disconnected it connects first, starting a daemon if autoStart is on.
   */
  async act<M extends Method>(method: M, params: Params<M>): Promise<Result<M>> {
    if (!this.client || this.client.closed) {
      this.retryDelay = this.initialDelay;
      await this.connectNow(true);
    }
    return this.request(method, params);
  }

  /** refreshSummary asks hub/summary now (the status bar's money). */
  async refreshSummary(): Promise<void> {
    const c = this.client;
    if (!c) {
      return;
    }
    try {
      const s = await c.request(Methods.Summary, {});
      this.summary = s;
      this.summaryEmitter.fire(s);
    } catch (err) {
      if (isHubError(err, ErrorCodes.MethodNotFound)) {
        // An older daemon: take the money from engine/list.
        const e = await c.request(Methods.EngineList, {}).catch(() => undefined);
        if (e) {
          const n = this.model.counts();
          this.summary = {
            running: n.running, needs_input: n.needsInput, queued: n.queued, month: e.month,
            spent_usd: e.spent_usd, reserved_usd: e.reserved_usd, monthly_cap_usd: e.monthly_cap_usd,
          };
          this.summaryEmitter.fire(this.summary);
        }
        return;
      }
      this.log(`hub/summary: ${(err as Error).message}`);
    }
  }

  dispose(): void {
    this.disposed = true;
    this.clearRetry();
    this.summaryRead.dispose();
    const c = this.client;
    this.client = undefined;
    c?.close();
    this.stateEmitter.dispose();
    this.eventEmitter.dispose();
    this.summaryEmitter.dispose();
    this.errorEmitter.dispose();
    this.model.dispose();
  }

  private get initialDelay(): number {
    return this.o.backoff?.initialMs ?? 250;
  }

  private get maxDelay(): number {
    return this.o.backoff?.maxMs ?? 5000;
  }

  private log(line: string): void {
    this.o.log?.(line);
  }

  private setState(s: SessionState): void {
    if (s !== this.stateValue) {
      this.stateValue = s;
      this.stateEmitter.fire(s);
    }
  }

  private clearRetry(): void {
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    }
  }

  private scheduleRetry(): void {
    if (this.disposed || this.retryTimer) {
      return;
    }
    const delay = this.retryDelay;
    this.retryDelay = Math.min(this.retryDelay * 2, this.maxDelay);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connectNow(false);
    }, delay);
  }

  private async connectOnce(allowStart: boolean): Promise<void> {
    this.setState("connecting");
    const home = this.o.home();
    let c: HubClient | undefined;
    try {
      if (allowStart) {
        await daemonUp({ home, binary: this.o.binary(), autoStart: this.o.autoStart(), env: this.o.env });
      }
      c = await HubClient.connect(socketPath(home), {
        clientName: this.o.clientName ?? "hub-vscode",
        clientVersion: this.o.clientVersion,
        protocolVersion: this.o.protocolVersion,
      });
      this.wire(c);
      this.model.beginSync();
      await c.request(Methods.Subscribe, {});
      const list = await c.request(Methods.JobList, { limit: this.o.listLimit ?? 500 });
      if (c.closed || this.disposed) {
        throw new HubError(ClientErrorCodes.ConnectionClosed, "the hub daemon went away while connecting");
      }
      this.client = c;
      this.capabilities = new Set(c.info.capabilities ?? []);
      this.model.replaceAll(list.jobs ?? []);
      this.model.setConnected(true);
      this.retryDelay = this.initialDelay;
      this.lastError = undefined;
      this.log(`connected to hub ${c.info.server_version} (protocol ${c.info.protocol_version}, pid ${c.info.pid}) at ${home}`);
      this.setState("connected");
      void this.refreshSummary();
    } catch (err) {
      c?.close();
      let e = err instanceof HubError ? err : new HubError(ClientErrorCodes.ConnectionClosed, String(err));
      if (e.code === ClientErrorCodes.DaemonAbsent && !(allowStart && this.o.autoStart())) {
        e = notRunning();
      }
      const repeated = this.lastError?.message === e.message;
      this.lastError = e;
      if (!repeated) {
        this.log(`connect: ${e.display()}`);
        this.errorEmitter.fire(e);
      }
      this.model.setConnected(false);
      this.setState("disconnected");
      this.scheduleRetry();
    }
  }

  private wire(c: HubClient): void {
    const subs: Disposable[] = [
      c.onNotification(Notifications.JobChanged, (st) => {
        if (this.model.apply(st)) {
          this.summaryRead.ask();
        }
      }),
      c.onNotification(Notifications.JobEvent, (ev) => this.eventEmitter.fire(ev)),
      c.onNotification(Notifications.QuestionAsked, (n) => this.model.questionAsked(n.job_id, n.question)),
      c.onNotification(Notifications.QuestionAnswered, (n) => {
        this.model.questionAnswered(n);
        this.summaryRead.ask();
      }),
    ];
    c.onClose(() => {
      subs.forEach((s) => s.dispose());
      if (this.client !== c) {
        return;
      }
      this.client = undefined;
      this.log("the hub daemon went away; reconnecting");
      this.model.setConnected(false);
      this.setState("disconnected");
      this.retryDelay = this.initialDelay;
      this.scheduleRetry();
    });
  }
}
