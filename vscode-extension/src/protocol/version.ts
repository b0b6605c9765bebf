// The protocol version check made on every (re)connect.

import { ClientErrorCodes, HubError } from "./errors";

function majorMinor(v: string): [number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.\d+)?/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/**
 * checkProtocol returns undefined when a client built for protocol `mine`
 * can speak to a daemon that reports `theirs`, else a HubError that says
 * which side to update. Same major, and a daemon minor at least the
 * client's; for 0.x the minors must be equal.
 */
export function checkProtocol(theirs: string, mine: string): HubError | undefined {
  const t = majorMinor(theirs);
  const m = majorMinor(mine);
  if (t && m && t[0] === m[0] && (m[0] === 0 ? t[1] === m[1] : t[1] >= m[1])) {
    return undefined;
  }
  const newerDaemon = t !== undefined && m !== undefined && (t[0] > m[0] || (t[0] === m[0] && t[1] > m[1]));
  const what = newerDaemon ? "update the hub extension" : "update hub (rebuild or reinstall the hub binary, then run `hub shutdown` so a new daemon starts)";
  return new HubError(
    ClientErrorCodes.VersionMismatch,
    `hub's daemon speaks protocol ${theirs || "(unknown)"}, this extension speaks ${mine}`,
    { hint: `They must match in major.minor: ${what}.` },
  );
}
