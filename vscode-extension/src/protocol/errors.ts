// HubError: every failure a caller of the hub client sees, with the daemon's
// code, message and hint, or one of the client's own codes.

import { ErrorCodes, type ErrorData } from "./generated";

/**
 * Codes of failures that happen on this side of the socket. They are positive
 * so they never collide with JSON-RPC's or hub's negative codes.
 */
export const ClientErrorCodes = {
  /** Nothing answers on the socket. */
  DaemonAbsent: 1,
  /** The daemon speaks another protocol version. */
  VersionMismatch: 2,
  /** The connection closed while the request was in flight, or before it. */
  ConnectionClosed: 3,
  /** `hub serve` could not be started, or did not answer in time. */
  StartFailed: 4,
} as const;

/**
 * notRunningHint is what to do when no daemon answers: any hub command
 * starts the daemon (hub's own client does, as the extension does), so the
 * hint names one. Plain text: notifications and the view show it as is.
 */
export const notRunningHint = "Any hub command (hub jobs, say) starts it.";

/** HubError is an error from the daemon, or one of the client's own. */
export class HubError extends Error {
  override readonly name = "HubError";
  constructor(
    /** A code of ErrorCodes (from the daemon) or ClientErrorCodes. */
    readonly code: number,
    message: string,
    readonly data: ErrorData = {},
  ) {
    super(message);
  }

  /** One sentence that says what to do, when the daemon gave one. */
  get hint(): string | undefined {
    return this.data.hint || undefined;
  }

  /** The paths at fault (a merge's conflicts). */
  get files(): string[] {
    return this.data.files ?? [];
  }

  /** codeName names the code: "NotFound", "Conflict", "DaemonAbsent", … */
  get codeName(): string {
    for (const [k, v] of Object.entries(ErrorCodes)) {
      if (v === this.code) {
        return k;
      }
    }
    for (const [k, v] of Object.entries(ClientErrorCodes)) {
      if (v === this.code) {
        return k;
      }
    }
    return String(this.code);
  }

  /** display is the message and the hint, for a notification. */
  display(): string {
    const hint = this.hint;
    if (!hint) {
      return this.message;
    }
    const sep = /[.!?]$/.test(this.message) ? " " : ". ";
    return this.message + sep + hint;
  }
}

/** isHubError narrows an unknown error to a HubError with the given code, if any. */
export function isHubError(err: unknown, code?: number): err is HubError {
  return err instanceof HubError && (code === undefined || err.code === code);
}

/** errorText is what to show the user for any error. */
export function errorText(err: unknown): string {
  if (err instanceof HubError) {
    return err.display();
  }
  if (err instanceof Error) {
    return err.message;
  }
  return String(err);
}
