import assert from "node:assert/strict";
import { test } from "node:test";
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

test("etcd down: serving goes on with the known workers, and registration resumes when it returns", async () => {
  const nats = await startNatsServer();
  let etcd = await startEtcd();
  const { ask, stop, frontend } = await startPair(nats.url, etcd.endpoint);
  try {
    await untilOk(ask, 10_000);
    await etcd.stop({ keepData: true });
    for (let i = 0; i < 3; i++) assert.equal((await ask()).choices.length, 1, "served with etcd down");
    etcd = await startEtcd(etcd.layout);
    const health = async () => {
      const body = (await (await fetch(`${frontend.url}/health`)).json()) as { instances: unknown[] };
      if (body.instances.length !== 1) throw new Error("worker not registered yet");
    };
    await untilOk(health, 20_000);
    assert.equal((await ask()).choices.length, 1);
  } finally {
    await stop();
    await Promise.all([nats.stop(), etcd.stop()]);
  }
});
