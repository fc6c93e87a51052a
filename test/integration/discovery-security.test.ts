import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Etcd3 } from "etcd3";
import { type ArmatureError, isArmatureError } from "../../src/protocol/index.js";
import { card } from "../../src/runtime/contracts/discovery-contract.js";
import { connectDistributedRuntime, type DiscoverySecurityOptions } from "../../src/runtime/index.js";
import { type EtcdServer, startEtcd } from "../helpers/etcd-server.js";
import { type NatsServer, startNatsServer } from "../helpers/nats-server.js";
import { makeThrowawayCa, type ThrowawayCa } from "../helpers/throwaway-ca.js";

// Credentials and TLS for etcd (`--discovery`), against real etcds that require them.
// Regression: credentials in the --discovery URL were dropped, and etcds:// was refused.

let nats: NatsServer;
before(async () => {
  nats = await startNatsServer();
});
after(() => nats.stop());

/** Connects a whole runtime, registers an instance and finds it in discovery. */
async function registerAndList(discovery: string, security: DiscoverySecurityOptions = {}): Promise<void> {
  const runtime = await connectDistributedRuntime({ bus: nats.url, discovery, discoverySecurity: security });
  try {
    const lease = await runtime.discovery.register(
      { id: "secure-worker", role: "aggregated", model: "m", card },
      { ttlMs: 5000 },
    );
    const ids = (await runtime.discovery.list()).map((i) => i.id);
    assert.ok(ids.includes("secure-worker"), `listed: ${ids.join(", ")}`);
    await lease.revoke();
  } finally {
    await runtime.close();
  }
}

/** The start error, checked to be a quick CONFIG_INVALID without any of `secrets` in it. */
async function startError(
  discovery: string,
  security: DiscoverySecurityOptions,
  secrets: readonly string[],
): Promise<ArmatureError> {
  const started = Date.now();
  const error = await connectDistributedRuntime({
    bus: nats.url,
    discovery,
    discoverySecurity: security,
    discoveryConnectTimeoutMs: 3000,
  }).then(
    async (runtime) => {
      await runtime.close();
      throw new Error("connected although it should not have");
    },
    (e: unknown) => e,
  );
  assert.ok(isArmatureError(error) && error.code === "CONFIG_INVALID", String(error));
  assert.ok(Date.now() - started < 8000, "a refused connection must fail at once, not hang");
  const visible = `${error.message} ${String((error.cause as Error | undefined)?.message)}`;
  for (const secret of secrets) assert.ok(!visible.includes(secret), `the error shows a secret: ${visible}`);
  return error;
}

describe("etcd with auth enabled", () => {
  let etcd: EtcdServer;
  before(async () => {
    etcd = await startEtcd();
    const admin = new Etcd3({ hosts: `http://${etcd.endpoint}` });
    try {
      await admin
        .role("root")
        .create()
        .catch(() => {});
      await admin.user("root").create("etcd-root-pw");
      await admin.user("root").addRole("root");
      await admin.auth.authEnable();
    } finally {
      admin.close();
    }
  });
  after(() => etcd.stop());

  test("the user and password in the URL are used", () => registerAndList(`etcd://root:etcd-root-pw@${etcd.endpoint}`));

  test("--discovery-user and --discovery-password are used", () =>
    registerAndList(`etcd://${etcd.endpoint}`, { user: "root", password: "etcd-root-pw" }));

  test("a wrong password fails at once, names the flags and never shows the password", async () => {
    const error = await startError(`etcd://root:wrong-etcd-pw@${etcd.endpoint}`, {}, ["wrong-etcd-pw"]);
    assert.match(error.message, /etcd rejected the credentials.*--discovery-user\/--discovery-password/);
  });

  test("no credentials at all says which flags to give", async () => {
    const error = await startError(`etcd://${etcd.endpoint}`, {}, []);
    assert.match(error.message, /requires credentials: give --discovery-user\/--discovery-password/);
  });

  test("a user without a password is refused before connecting", async () => {
    await assert.rejects(
      connectDistributedRuntime({ bus: nats.url, discovery: `etcd://${etcd.endpoint}`, discoverySecurity: { user: "root" } }),
      /--discovery-user and --discovery-password go together/,
    );
  });
});

describe("etcd with TLS", () => {
  let ca: ThrowawayCa;
  let etcd: EtcdServer;
  let verifying: EtcdServer;
  before(async () => {
    ca = await makeThrowawayCa();
    const tls = { certFile: ca.serverCertFile, keyFile: ca.serverKeyFile, caFile: ca.caFile };
    [etcd, verifying] = await Promise.all([
      startEtcd(undefined, "127.0.0.1", { tls }),
      startEtcd(undefined, "127.0.0.1", {
        tls: { ...tls, clientCertAuth: true, clientCertFile: ca.clientCertFile, clientKeyFile: ca.clientKeyFile },
      }),
    ]);
  });
  after(async () => {
    await Promise.all([etcd.stop(), verifying.stop()]);
    await ca.remove();
  });

  test("etcds:// with --discovery-tls-ca connects", () => registerAndList(`etcds://${etcd.endpoint}`, { tlsCaFile: ca.caFile }));

  test("https:// is accepted too", () => registerAndList(`https://${etcd.endpoint}`, { tlsCaFile: ca.caFile }));

  test("a CA that did not sign etcd's certificate fails clearly, naming --discovery-tls-ca", async () => {
    const error = await startError(`etcds://${etcd.endpoint}`, { tlsCaFile: ca.otherCaFile }, []);
    assert.match(error.message, /etcds:\/\/127\.0\.0\.1:\d+.*--discovery-tls-ca/);
  });

  test("plain etcd:// against a TLS etcd fails clearly instead of hanging", async () => {
    const error = await startError(`etcd://${etcd.endpoint}`, {}, []);
    assert.match(error.message, /without TLS\? \(etcds:\/\/HOST:PORT if it serves TLS\)/);
  });

  test("an etcd that verifies clients accepts --discovery-tls-cert/--discovery-tls-key", () =>
    registerAndList(`etcds://${verifying.endpoint}`, {
      tlsCaFile: ca.caFile,
      tlsCertFile: ca.clientCertFile,
      tlsKeyFile: ca.clientKeyFile,
    }));

  test("a missing client key file is named by its flag", async () => {
    await assert.rejects(
      connectDistributedRuntime({
        bus: nats.url,
        discovery: `etcds://${verifying.endpoint}`,
        discoverySecurity: { tlsCaFile: ca.caFile, tlsCertFile: ca.clientCertFile, tlsKeyFile: `${ca.dir}/absent.key` },
      }),
      /--discovery-tls-key \(ARMATURE_DISCOVERY_TLS_KEY\) .*absent\.key: ENOENT/,
    );
  });
});

test("an unreachable etcd's error shows the URL without its password", async () => {
  const error = await startError("etcd://root:hidden-etcd-pw@127.0.0.1:1", {}, ["hidden-etcd-pw"]);
  assert.match(error.message, /etcd at etcd:\/\/127\.0\.0\.1:1/);
});
