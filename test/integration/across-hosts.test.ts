import assert from "node:assert/strict";
import { test } from "node:test";
import OpenAI from "openai";
import { startArmature } from "../helpers/armature-process.js";
import { startEtcd } from "../helpers/etcd-server.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { createTestHost } from "../helpers/network-namespace.js";

test("a worker on another host (its own network namespace) serves a frontend here over a real interface", async (t) => {
  const host = await createTestHost();
  if ("unavailable" in host) {
    assert.ok(!process.env.CI || process.getuid?.() !== 0, `CI runs as root and should make namespaces: ${host.unavailable}`);
    // Without CAP_NET_ADMIN (not root, or a sandbox without `ip netns`) no second host can be made;
    // the reason printed is the error `ip` gave.
    t.skip(host.unavailable);
    return;
  }
  // NATS and etcd listen on this host's side of the veth link; the worker reaches them across it.
  const nats = await startNatsServer(undefined, host.hostAddress);
  const etcd = await startEtcd(undefined, host.hostAddress);
  const cluster = ["--bus", nats.url, "--discovery", `etcd://${etcd.endpoint}`];
  const worker = await startArmature(["worker", ...cluster, "--engine", "mocker", "--speedup-ratio", "100"], {}, host.exec);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0"]);
  try {
    const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({ model: "armature-mocker", messages: [{ role: "user", content: "across hosts" }], max_tokens: 5 })
      .withResponse();
    assert.equal(data.choices.length, 1);
    assert.match(worker.output(), new RegExp(response.headers.get("x-armature-worker") ?? "no worker header"));
  } finally {
    await Promise.all([frontend.stop(), worker.stop()]);
    await Promise.all([nats.stop(), etcd.stop()]);
    await host.remove();
  }
});
