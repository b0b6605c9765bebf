// HubClient and the daemon start, against a real `hub serve`.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import { after, before, describe, test } from "node:test";

import { HubClient } from "../../src/protocol/client";
import { daemonUp, startDaemon } from "../../src/protocol/daemon";
import { ClientErrorCodes, HubError } from "../../src/protocol/errors";
import { ErrorCodes, Methods, PROTOCOL_VERSION } from "../../src/protocol/generated";
import { daemonLog, socketPath } from "../../src/protocol/paths";
import { Session } from "../../src/model/session";
import { hubBin, Sandbox, until } from "./harness";

describe("HubClient on a running daemon", () => {
  let sb: Sandbox;
  let c: HubClient;

  before(async () => {
    sb = await Sandbox.create();
    await sb.serve();
    c = await HubClient.connect(sb.socket, { clientName: "unit", clientVersion: "0" });
  });

  after(async () => {
    c?.close();
    await sb?.cleanup();
  });

  test("initialize reports the daemon and a matching protocol version", () => {
    assert.equal(c.info.protocol_version, PROTOCOL_VERSION);
    assert.equal(c.info.home, sb.home);
    assert.ok(c.info.pid > 0);
    assert.ok(c.info.server_version.length > 0);
    assert.ok(c.info.capabilities.includes("subscribe"));
  });

  test("an unknown job id is a HubError NotFound with a hint", async () => {
    await assert.rejects(c.request(Methods.JobStatus, { id: "nosuchjob" }), (err: unknown) => {
      assert.ok(err instanceof HubError);
      assert.equal(err.code, ErrorCodes.NotFound);
      assert.equal(err.codeName, "NotFound");
      assert.match(err.message, /nosuchjob/);
      assert.ok((err.hint ?? "").length > 0, "the error carries a hint");
      assert.ok(err.display().includes(err.hint!));
      return true;
    });
    await assert.rejects(c.request(Methods.JobFiles, { id: "nosuchjob" }), (err: unknown) => err instanceof HubError && err.code === ErrorCodes.NotFound);
  });

  test("bad params are InvalidParams, with the field at fault", async () => {
    await assert.rejects(c.request(Methods.JobFile, { id: "x", rev: "middle", path: "a" }), (err: unknown) => {
      assert.ok(err instanceof HubError);
      assert.equal(err.code, ErrorCodes.InvalidParams);
      assert.equal(err.data.field, "rev");
      assert.ok(err.hint);
      return true;
    });
  });

  test("a daemon speaking another protocol version is refused with a clear message", async () => {
    await assert.rejects(HubClient.connect(sb.socket, { protocolVersion: "0.9.0" }), (err: unknown) => {
      assert.ok(err instanceof HubError);
      assert.equal(err.code, ClientErrorCodes.VersionMismatch);
      assert.match(err.message, new RegExp(`daemon speaks protocol ${PROTOCOL_VERSION.replace(/\./g, "\\.")}, this extension speaks 0\\.9\\.0`));
      assert.match(err.hint ?? "", /update hub/);
      return true;
    });
  });

  test("a request after close fails with ConnectionClosed", async () => {
    const c2 = await HubClient.connect(sb.socket);
    c2.close();
    assert.ok(c2.closed);
    await assert.rejects(c2.request(Methods.Summary, {}), (err: unknown) => err instanceof HubError && err.code === ClientErrorCodes.ConnectionClosed);
  });

  test("hub/summary answers counts and money", async () => {
    const s = await c.request(Methods.Summary, {});
    assert.equal(typeof s.running, "number");
    assert.equal(typeof s.spent_usd, "number");
    assert.match(s.month, /^\d{4}-\d{2}$/);
  });
});

describe("starting the daemon", () => {
  let sb: Sandbox;

  before(async () => {
    sb = await Sandbox.create();
  });

  after(async () => {
    await sb?.cleanup();
  });

  test("no daemon and autoStart off: \"hub is not running\", and the hint says any hub command starts it", async () => {
    await assert.rejects(HubClient.connect(sb.socket), (err: unknown) => err instanceof HubError && err.code === ClientErrorCodes.DaemonAbsent);
    await assert.rejects(daemonUp({ home: sb.home, binary: hubBin, autoStart: false, env: sb.env }), (err: unknown) => {
      assert.ok(err instanceof HubError);
      assert.equal(err.message, "hub is not running");
      assert.equal(err.display(), "hub is not running. Any hub command (hub jobs, say) starts it.");
      assert.doesNotMatch(err.display(), /hub serve/);
      return true;
    });
  });

  test("a binary that cannot run is StartFailed with a hint", async () => {
    await assert.rejects(startDaemon({ home: sb.home, binary: `${sb.dir}/no-such-hub`, env: sb.env }), (err: unknown) => {
      assert.ok(err instanceof HubError);
      assert.equal(err.code, ClientErrorCodes.StartFailed);
      assert.match(err.hint ?? "", /hub\.binary/);
      return true;
    });
  });

  test("autoStart starts `hub serve` when none answers, logging to HUB_HOME/logs/daemon.log", async (t) => {
    const t0 = Date.now();
    await daemonUp({ home: sb.home, binary: hubBin, autoStart: true, env: sb.env });
    const c = await HubClient.connect(socketPath(sb.home));
    try {
      assert.equal(c.info.home, sb.home);
      assert.ok(fs.existsSync(daemonLog(sb.home)));
      t.diagnostic(`auto-start: the daemon answered ${Date.now() - t0} ms after the start`);
      // A second daemonUp finds it running and starts nothing.
      await daemonUp({ home: sb.home, binary: hubBin, autoStart: true, env: sb.env });
      const again = await HubClient.connect(socketPath(sb.home));
      assert.equal(again.info.pid, c.info.pid);
      again.close();
    } finally {
      c.close();
    }
  });

  test("a session with autoStart on connects to the daemon it started", async () => {
    await sb.shutdown();
    const session = new Session({ home: () => sb.home, binary: () => hubBin, autoStart: () => true, env: sb.env });
    try {
      await session.start();
      assert.equal(session.state, "connected", session.lastError?.display());
      assert.ok(session.model.connected);
    } finally {
      session.dispose();
    }
  });

  test("Start Hub: a session with autoStart off starts the daemon when the user asks, and connects", async () => {
    await sb.shutdown();
    const session = new Session({ home: () => sb.home, binary: () => hubBin, autoStart: () => false, env: sb.env, backoff: { initialMs: 60_000 } });
    try {
      await session.start();
      assert.equal(session.state, "disconnected");
      assert.equal(session.lastError?.message, "hub is not running");
      await session.startHub();
      assert.equal(session.state, "connected", session.lastError?.display());
      assert.equal(session.lastError, undefined);
      // The daemon it started is a real one: the CLI talks to it.
      const id = await sb.startJob("after Start Hub", "echo s > s.txt");
      await until("the job to reach the session", () => session.model.get(id)?.state === "succeeded", 15000);
      // Asked again while connected, it does nothing.
      const pid = session.info?.pid;
      await session.startHub();
      assert.equal(session.info?.pid, pid);
    } finally {
      session.dispose();
    }
  });

  test("Start Hub with a binary that cannot run rejects with StartFailed and stays disconnected", async () => {
    await sb.shutdown();
    const session = new Session({ home: () => sb.home, binary: () => `${sb.dir}/no-such-hub`, autoStart: () => false, env: sb.env, backoff: { initialMs: 60_000 } });
    try {
      await session.start();
      await assert.rejects(session.startHub(), (err: unknown) => err instanceof HubError && err.code === ClientErrorCodes.StartFailed);
      assert.equal(session.state, "disconnected");
    } finally {
      session.dispose();
    }
  });
});
