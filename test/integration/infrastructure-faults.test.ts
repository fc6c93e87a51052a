import assert from "node:assert/strict";
import { test } from "node:test";
import { Etcd3 } from "etcd3";
import OpenAI from "openai";
import { startArmature } from "../helpers/armature-process.js";
import { startEtcd } from "../helpers/etcd-server.js";
import { startNatsServer } from "../helpers/nats-server.js";

// What a deployment does when NATS or etcd goes away and comes back.

async function untilOk(attempt: () => Promise<unknown>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    try {
      await attempt();
      return Date.now() - started;
    } catch (error) {
      if (Date.now() - started > timeoutMs) throw error;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** A mocker worker process and a frontend process on the given servers, and a way to ask them. */
async function startPair(busUrl: string, etcdEndpoint: string) {
  const cluster = ["--bus", busUrl, "--discovery", `etcd://${etcdEndpoint}`];
  const worker = await startArmature(["worker", ...cluster, "--engine", "mocker", "--speedup-ratio", "100"]);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0"]);
  const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 10_000 });
  return {
    frontend,
    ask: () => client.completions.create({ model: "armature-mocker", prompt: "hi", max_tokens: 3 }),
    stop: () => Promise.all([frontend.stop(), worker.stop()]),
  };
}

test("nats-server restarted: worker and frontend reconnect and new requests succeed within seconds", async () => {
  let nats = await startNatsServer();
  const etcd = await startEtcd();
  const { ask, stop } = await startPair(nats.url, etcd.endpoint);
  try {
    await untilOk(ask, 10_000);
    await nats.stop();
    nats = await startNatsServer(nats.ports);
    const recoveredMs = await untilOk(ask, 20_000);
    assert.ok(recoveredMs < 20_000);
  } finally {
    await stop();
    await Promise.all([nats.stop(), etcd.stop()]);
  }
});

test("etcd down past the lease TTL: serving goes on with the known workers; a worker whose lease is gone registers again", async () => {
  // Regression: the outage was far shorter than the 10 s lease and nothing ever took the worker's
  // registration away, so "registration resumes" was never exercised.
  const nats = await startNatsServer();
  let etcd = await startEtcd();
  const { ask, stop, frontend } = await startPair(nats.url, etcd.endpoint);
  const instances = async (): Promise<number> =>
    ((await (await fetch(`${frontend.url}/health`)).json()) as { instances: unknown[] }).instances.length;
  try {
    await untilOk(ask, 10_000);
    await etcd.stop({ keepData: true });
    const downAt = Date.now();
    for (let i = 0; i < 3; i++) assert.equal((await ask()).choices.length, 1, "served with etcd down");
    // Longer than the worker's 10 s lease; the keep-alives fail all along.
    await new Promise((r) => setTimeout(r, Math.max(0, 11_000 - (Date.now() - downAt))));
    assert.equal((await ask()).choices.length, 1, "still served after the lease's TTL");
    etcd = await startEtcd(etcd.layout);
    // etcd renews leases when it restarts; take the worker's away, as an expiry would.
    const client = new Etcd3({ hosts: etcd.endpoint });
    const registered = async (): Promise<string[]> => client.getAll().prefix("/armature/instances/").keys();
    try {
      await untilOk(async () => {
        const { leases } = await client.leaseClient.leaseLeases();
        if (leases.length === 0) throw new Error("no lease yet");
        for (const lease of leases) await client.leaseClient.leaseRevoke({ ID: lease.ID });
      }, 20_000);
      assert.deepEqual(await registered(), [], "the revoked lease took the worker's registration with it");
      // The worker's next keep-alive finds its lease gone and registers again.
      await untilOk(async () => {
        if ((await registered()).length !== 1) throw new Error("worker not registered again yet");
      }, 20_000);
    } finally {
      client.close();
    }
    await untilOk(async () => {
      if ((await instances()) !== 1) throw new Error("the frontend does not list the worker");
    }, 20_000);
    assert.equal((await ask()).choices.length, 1);
  } finally {
    await stop();
    await Promise.all([nats.stop(), etcd.stop()]);
  }
});
