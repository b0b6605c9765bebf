// What a job changed, as the tree and the diff views read it: job/files,
// job/file at base and head (a missing side, binary content), and job/merge
// with its refusals. Against a real daemon and real git.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { mergeError } from "../../src/model/format";
import { Session } from "../../src/model/session";
import { HubError } from "../../src/protocol/errors";
import { Encodings, ErrorCodes, Methods, type FileResult } from "../../src/protocol/generated";
import { hubBin, Sandbox, until } from "./harness";

function bytes(f: FileResult): Buffer {
  return f.encoding === Encodings.Base64 ? Buffer.from(f.content, "base64") : Buffer.from(f.content, "utf8");
}

describe("job files", () => {
  let sb: Sandbox;
  let session: Session;
  let id: string;

  before(async () => {
    sb = await Sandbox.create();
    await sb.serve();
    session = new Session({ home: () => sb.home, binary: () => hubBin, autoStart: () => false, env: sb.env });
    await session.start();
    assert.equal(session.state, "connected", session.lastError?.display());
    id = await sb.startJob(
      "change some files",
      "printf 'one\\nTWO\\nthree\\n' > keep.txt; echo new > added.txt; rm README.md; printf 'a\\000b' > blob.bin",
      "--verify", "test -f added.txt",
    );
    await until("the job to succeed", () => session.model.get(id)?.state === "succeeded", 20000);
  });

  after(async () => {
    session?.dispose();
    await sb?.cleanup();
  });

  test("job/files lists base..head: files with their stats, and the commits", async () => {
    const r = await session.request(Methods.JobFiles, { id });
    const job = session.model.get(id)!;
    assert.equal(r.base, job.base);
    assert.ok(r.tip && r.tip !== r.base);
    const byPath = Object.fromEntries(r.files.map((f) => [f.path, f]));
    assert.deepEqual(Object.keys(byPath).sort(), ["README.md", "added.txt", "blob.bin", "keep.txt"]);
    assert.deepEqual([byPath["added.txt"].change, byPath["added.txt"].added, byPath["added.txt"].deleted], ["added", 1, 0]);
    assert.deepEqual([byPath["keep.txt"].change, byPath["keep.txt"].added, byPath["keep.txt"].deleted], ["modified", 2, 1]);
    assert.deepEqual([byPath["README.md"].change, byPath["README.md"].deleted], ["deleted", 1]);
    assert.equal(byPath["blob.bin"].added, -1, "binary");
    assert.ok(r.commits.length >= 1);
    assert.equal(r.commits.at(-1)!.sha, r.tip);
    assert.equal(job.verify_exit, 0);
  });

  test("job/file reads base and head; a side where the path is absent is empty, not an error", async () => {
    const base = await session.request(Methods.JobFile, { id, rev: "base", path: "keep.txt" });
    const head = await session.request(Methods.JobFile, { id, rev: "tip", path: "keep.txt" });
    assert.equal(bytes(base).toString(), "one\ntwo\n");
    assert.equal(bytes(head).toString(), "one\nTWO\nthree\n");
    assert.equal(head.size, 14);
    assert.ok(base.exists && head.exists);

    const addedBase = await session.request(Methods.JobFile, { id, rev: "base", path: "added.txt" });
    assert.deepEqual([addedBase.exists, addedBase.content], [false, ""]);
    const deletedHead = await session.request(Methods.JobFile, { id, rev: "tip", path: "README.md" });
    assert.deepEqual([deletedHead.exists, deletedHead.content], [false, ""]);

    const blob = await session.request(Methods.JobFile, { id, rev: "tip", path: "blob.bin" });
    assert.ok(blob.binary);
    assert.equal(blob.encoding, Encodings.Base64);
    assert.deepEqual([...bytes(blob)], [0x61, 0x00, 0x62]);
  });

  test("job/file refuses a path outside the repository", async () => {
    await assert.rejects(session.request(Methods.JobFile, { id, rev: "tip", path: "../etc/passwd" }), (err: unknown) => {
      assert.ok(err instanceof HubError);
      assert.equal(err.code, ErrorCodes.InvalidParams);
      return true;
    });
  });

  test("job/merge merges the branch; a conflicting one is refused with the files, nothing touched", async () => {
    const a = await sb.startJob("edit keep A", "echo A > keep.txt");
    const b = await sb.startJob("edit keep B", "echo B > keep.txt");
    await until("both to succeed", () => [a, b].every((x) => session.model.get(x)?.state === "succeeded"), 20000);

    const m = await session.request(Methods.JobMerge, { id: a });
    assert.equal(m.branch, `hub/${a}`);
    assert.equal(m.into, "main");
    assert.equal((await sb.git("rev-parse", "HEAD")).trim(), m.commit);
    assert.equal((await sb.git("show", "HEAD:keep.txt")).trim(), "A");

    const before = (await sb.git("rev-parse", "HEAD")).trim();
    const err = await session.request(Methods.JobMerge, { id: b }).then(
      () => assert.fail("the merge should be refused"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof HubError);
    assert.equal(err.code, ErrorCodes.Conflict);
    assert.deepEqual(err.files, ["keep.txt"]);
    const text = mergeError(b, err);
    assert.match(text, /^Hub: cannot merge job \w+: .+\. Conflicting files: keep\.txt\./);
    assert.equal((await sb.git("rev-parse", "HEAD")).trim(), before, "nothing touched");
    assert.equal((await sb.git("status", "--porcelain")).trim(), "");

    const running = await sb.startJob("still running", 'hub ask "wait?" > answer.txt');
    await until("it to ask", () => session.model.get(running)?.state === "needs_input");
    await assert.rejects(session.request(Methods.JobMerge, { id: running }), (e: unknown) => e instanceof HubError && e.code === ErrorCodes.WrongState && !!e.hint);
    await session.request(Methods.JobReply, { id: running, text: "no" });
    await until("it to end", () => session.model.get(running)?.state === "succeeded");
  });
});
