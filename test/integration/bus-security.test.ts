import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { NatsConnection } from "@nats-io/transport-node";
import { type ArmatureError, isArmatureError } from "../../src/protocol/index.js";
import type { BusSecurityOptions } from "../../src/runtime/index.js";
import { compileBusConnection, connectBus, NatsRequestPlane } from "../../src/runtime/nats/index.js";
import { type EtcdServer, startEtcd } from "../helpers/etcd-server.js";
import { type NatsServer, startNatsServer } from "../helpers/nats-server.js";
import { makeThrowawayCa, type ThrowawayCa } from "../helpers/throwaway-ca.js";

// Credentials and TLS for NATS (`--bus`), against real nats-servers that require them.
// Regression: credentials in the --bus URL were dropped, so a server with auth refused every process.

const run = promisify(execFile);
const BIN = fileURLToPath(new URL("../../bin/armature.js", import.meta.url));

/** Connects, serves and calls one address: the connection really works, not just the handshake. */
async function roundTrip(url: string, security: BusSecurityOptions = {}): Promise<void> {
  const bus = compileBusConnection(url, security);
  const connections: NatsConnection[] = [await connectBus(bus), await connectBus(bus)];
  try {
    const serving = new NatsRequestPlane(connections[0] as NatsConnection);
    const calling = new NatsRequestPlane(connections[1] as NatsConnection);
    await serving.serve("echo", async function* (payload) {
      yield payload;
    });
    const got: unknown[] = [];
    for await (const item of calling.call("echo", { hello: "secure" })) got.push(item);
    assert.deepEqual(got, [{ hello: "secure" }]);
  } finally {
    await Promise.all(connections.map((c) => c.close()));
  }
}

/** The connection error, checked to be a quick CONFIG_INVALID without any of `secrets` in it. */
async function connectError(
  url: string,
  security: BusSecurityOptions,
  secrets: readonly string[],
  handshakeTimeoutMs?: number,
): Promise<ArmatureError> {
  const started = Date.now();
  const timeout = handshakeTimeoutMs ? { timeout: handshakeTimeoutMs } : {};
  const error = await connectBus(compileBusConnection(url, security), timeout).then(
    async (nc) => {
      await nc.close();
      throw new Error("connected although it should not have");
    },
    (e: unknown) => e,
  );
  assert.ok(isArmatureError(error) && error.code === "CONFIG_INVALID", String(error));
  assert.ok(Date.now() - started < 10_000, "a refused connection must fail at once, not hang");
  const visible = `${error.message} ${String((error.cause as Error | undefined)?.message)}`;
  for (const secret of secrets) assert.ok(!visible.includes(secret), `the error shows a secret: ${visible}`);
  return error;
}

describe("nats-server with user and password", () => {
  let server: NatsServer;
  let etcd: EtcdServer;
  const host = (): string => server.url.slice("nats://".length);
  before(async () => {
    [server, etcd] = await Promise.all([
      startNatsServer(undefined, "127.0.0.1", undefined, { auth: { user: "arm", password: "s3cret-pw" } }),
      startEtcd(),
    ]);
  });
  after(async () => {
    await Promise.all([server.stop(), etcd.stop()]);
  });

  test("the user and password in the URL are used", () => roundTrip(`nats://arm:s3cret-pw@${host()}`));

  test("--bus-user and --bus-password are used", () => roundTrip(server.url, { user: "arm", password: "s3cret-pw" }));

  test("a percent-encoded password in the URL is decoded", async () => {
    const special = await startNatsServer(undefined, "127.0.0.1", undefined, { auth: { user: "arm", password: "p@ss:w/rd" } });
    try {
      await roundTrip(`nats://arm:${encodeURIComponent("p@ss:w/rd")}@${special.url.slice("nats://".length)}`);
    } finally {
      await special.stop();
    }
  });

  test("a wrong password fails at once, names the flags and never shows the password", async () => {
    const error = await connectError(`nats://arm:wrong-pw-123@${host()}`, {}, ["wrong-pw-123"]);
    assert.match(error.message, /nats rejected the credentials/);
    assert.match(error.message, /--bus-user\/--bus-password/);
  });

  test("no credentials at all says which flags to give", async () => {
    const error = await connectError(server.url, {}, []);
    assert.match(error.message, /requires credentials.*--bus-user\/--bus-password, --bus-token or --bus-creds/);
  });

  test("armature worker with a wrong password exits non-zero with one clear line, password hidden", async () => {
    const started = Date.now();
    const result = await run(
      process.execPath,
      [
        BIN,
        "worker",
        "--engine",
        "mocker",
        "--bus",
        `nats://arm:wrong-pw-123@${host()}`,
        "--discovery",
        `etcd://${etcd.endpoint}`,
      ],
      { timeout: 30_000 },
    ).then(
      () => ({ code: 0, output: "" }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code, output: `${e.stdout}${e.stderr}` }),
    );
    assert.notEqual(result.code, 0);
    assert.ok(Date.now() - started < 20_000, "the worker must give up at once");
    assert.match(result.output, /nats rejected the credentials/);
    assert.doesNotMatch(result.output, /wrong-pw-123/);
  });

  test("armature worker logs its bus without the password", async () => {
    const { startArmature } = await import("../helpers/armature-process.js");
    const worker = await startArmature(
      ["worker", "--engine", "mocker", "--bus", `nats://arm:s3cret-pw@${host()}`, "--discovery", `etcd://${etcd.endpoint}`],
      {},
    );
    try {
      assert.match(worker.output(), /on nats:\/\/\*\*\*@127\.0\.0\.1:\d+/);
      assert.doesNotMatch(worker.output(), /s3cret-pw/);
    } finally {
      await worker.stop();
    }
  });
});

describe("nats-server with a token", () => {
  let server: NatsServer;
  const host = (): string => server.url.slice("nats://".length);
  before(async () => {
    server = await startNatsServer(undefined, "127.0.0.1", undefined, { auth: { token: "tok-0123456789" } });
  });
  after(() => server.stop());

  test("flags win over the URL's token", () => {
    const bus = compileBusConnection(`nats://tok-0123456789@${host()}`, { user: "arm", password: "x" });
    assert.equal(bus.auth, "user");
    assert.equal(bus.options.token, undefined);
  });

  test("the token in the URL is used", () => roundTrip(`nats://tok-0123456789@${host()}`));

  test("--bus-token is used", () => roundTrip(server.url, { token: "tok-0123456789" }));

  test("a wrong token names --bus-token and is not shown", async () => {
    const error = await connectError(server.url, { token: "tok-wrong-987" }, ["tok-wrong-987"]);
    assert.match(error.message, /nats rejected the credentials.*--bus-token/);
  });

  test("a token and a user in flags together are refused before connecting", () => {
    assert.throws(
      () => compileBusConnection(server.url, { token: "t", user: "arm", password: "x" }),
      /--bus-token and --bus-user/,
    );
  });
});

describe("nats-server with TLS", () => {
  let ca: ThrowawayCa;
  let server: NatsServer;
  let verifying: NatsServer;
  let plain: NatsServer;
  const host = (s: NatsServer): string => s.url.slice("nats://".length);
  before(async () => {
    ca = await makeThrowawayCa();
    [server, verifying, plain] = await Promise.all([
      startNatsServer(undefined, "127.0.0.1", undefined, { tls: { certFile: ca.serverCertFile, keyFile: ca.serverKeyFile } }),
      startNatsServer(undefined, "127.0.0.1", undefined, {
        tls: { certFile: ca.serverCertFile, keyFile: ca.serverKeyFile, caFile: ca.caFile, verify: true },
      }),
      startNatsServer(),
    ]);
  });
  after(async () => {
    await Promise.all([server.stop(), verifying.stop(), plain.stop()]);
    await ca.remove();
  });

  test("tls:// with --bus-tls-ca connects and serves", () => roundTrip(`tls://${host(server)}`, { tlsCaFile: ca.caFile }));

  test("nats+tls:// is accepted too", () => roundTrip(`nats+tls://${host(server)}`, { tlsCaFile: ca.caFile }));

  test("a CA that did not sign the server's certificate fails clearly, naming --bus-tls-ca", async () => {
    const error = await connectError(`tls://${host(server)}`, { tlsCaFile: ca.otherCaFile }, []);
    assert.match(error.message, /TLS with NATS at tls:\/\/127\.0\.0\.1:\d+ failed.*--bus-tls-ca/);
  });

  test("without the CA (system trust only) the self-signed server is refused, naming --bus-tls-ca", async () => {
    const error = await connectError(`tls://${host(server)}`, {}, []);
    assert.match(error.message, /--bus-tls-ca/);
  });

  test("a server that verifies clients accepts --bus-tls-cert/--bus-tls-key", () =>
    roundTrip(`tls://${host(verifying)}`, {
      tlsCaFile: ca.caFile,
      tlsCertFile: ca.clientCertFile,
      tlsKeyFile: ca.clientKeyFile,
    }));

  test("a server that verifies clients refuses one without a certificate, and the call does not hang", async () => {
    const error = await connectError(`tls://${host(verifying)}`, { tlsCaFile: ca.caFile }, [], 2000);
    assert.match(error.message, /--bus-tls-cert/);
  });

  test("tls:// against a server without TLS suggests nats://", async () => {
    const error = await connectError(`tls://${host(plain)}`, { tlsCaFile: ca.caFile }, []);
    assert.match(error.message, /with TLS.*nats:\/\/HOST:PORT for a server without TLS/);
  });

  test("a missing CA file is named by its flag before any connection", () => {
    assert.throws(
      () => compileBusConnection(`tls://${host(server)}`, { tlsCaFile: `${ca.dir}/absent.pem` }),
      /--bus-tls-ca \(ARMATURE_BUS_TLS_CA\) .*absent\.pem: ENOENT/,
    );
  });
});

test("an unreachable bus's error shows the URL without its password", async () => {
  const error = await connectError("nats://arm:hidden-pw-555@127.0.0.1:1", {}, ["hidden-pw-555"]);
  assert.match(error.message, /cannot reach NATS at nats:\/\/127\.0\.0\.1:1/);
});
