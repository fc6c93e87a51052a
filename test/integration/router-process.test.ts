import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startArmature } from "../helpers/armature-process.js";
import { type EtcdServer, startEtcd } from "../helpers/etcd-server.js";
import { type NatsServer, startNatsServer } from "../helpers/nats-server.js";

// `armature router` as its own process: frontends started with --router remote ask it where each
// request goes; it routes by the KV events it hears from the worker processes.
let nats: NatsServer;
let etcd: EtcdServer;
before(async () => {
  [nats, etcd] = await Promise.all([startNatsServer(), startEtcd()]);
});
after(async () => {
  await Promise.all([nats.stop(), etcd.stop()]);
});

const BLOCK = 8;
const prompt = (letters: string): number[] =>
  [...letters].flatMap((letter) => Array.from({ length: BLOCK }, (_, i) => 10 + (letter.charCodeAt(0) - 65) * BLOCK + i));

test("a router process routes for a frontend by KV overlap, and the frontend outlives it", async () => {
  const cluster = ["--bus", nats.url, "--discovery", `etcd://${etcd.endpoint}`];
  const mocker = ["--engine", "mocker", "--speedup-ratio", "100", "--block-size", String(BLOCK)];
  const workerA = await startArmature(["worker", ...cluster, ...mocker]);
  const workerB = await startArmature(["worker", ...cluster, ...mocker]);
  const router = await startArmature(["router", ...cluster]);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0", "--router", "remote"]);
  try {
    let ids: string[] = [];
    for (const deadline = Date.now() + 10_000; ids.length < 2 && Date.now() < deadline; ) {
      ids = ((await (await fetch(`${frontend.url}/health`)).json()) as { instances: { id: string }[] }).instances.map(
        (i) => i.id,
      );
      await new Promise((r) => setTimeout(r, 50));
    }
    const [a, b] = ids as [string, string];
    const send = async (letters: string, pinned?: string): Promise<{ worker: string; overlap: string }> => {
      const res = await fetch(`${frontend.url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "armature-mocker",
          prompt: prompt(letters),
          max_tokens: 1,
          ...(pinned ? { nvext: { backend_instance_id: pinned } } : {}),
        }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.json();
      await new Promise((r) => setTimeout(r, 500)); // KV events reach the router process over NATS
      return { worker: res.headers.get("x-armature-worker") ?? "", overlap: res.headers.get("x-armature-overlap-blocks") ?? "" };
    };
    await send("ABCD", a);
    await send("EFGH", b);
    assert.deepEqual(await send("ABCDX"), { worker: a, overlap: "4" }, "the router process knows a caches ABCD");
    assert.deepEqual(await send("EFGHY"), { worker: b, overlap: "4" });

    // Without the router process the frontend keeps serving with its own policy.
    assert.equal(await router.stop("SIGTERM"), 0, router.output());
    const after = await send("ABCDZ");
    assert.ok([a, b].includes(after.worker));
  } finally {
    await Promise.all([frontend.stop(), router.stop(), workerA.stop(), workerB.stop()]);
  }
});
