// The URI schemes the extension serves, in one place.

import * as vscode from "vscode";

export const Scheme = {
  /** hub-job:/<id>/<base|head>/<path>: a file of a job at its base or head (read-only). */
  JobFile: "hub-job",
} as const;

export type Rev = "base" | "head";

/** jobFileUri names a job's file at a revision. */
export function jobFileUri(id: string, rev: Rev, path: string): vscode.Uri {
  return vscode.Uri.from({ scheme: Scheme.JobFile, path: `/${id}/${rev}/${path.replace(/^\/+/, "")}` });
}

/**
 * baseAtHeadPath names a job's file at its base with the head's path and a
 * query saying base: the multi-file changes view compares the paths of the
 * two sides, and would show every file as renamed otherwise.
 */
export function baseAtHeadPath(id: string, path: string): vscode.Uri {
  return jobFileUri(id, "head", path).with({ query: "rev=base" });
}

/** parseJobFileUri splits a hub-job URI, or returns undefined when it is not one. */
export function parseJobFileUri(uri: vscode.Uri): { id: string; rev: Rev; path: string } | undefined {
  if (uri.scheme !== Scheme.JobFile) {
    return undefined;
  }
  const m = /^\/([^/]+)\/(base|head)\/(.+)$/.exec(uri.path);
  if (!m) {
    return undefined;
  }
  const rev = uri.query === "rev=base" ? "base" : (m[2] as Rev);
  return { id: m[1], rev, path: m[3] };
}
