import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startArmature } from "../helpers/armature-process.js";
import { type ClusterServers, startClusterServers, waitForInstances } from "../helpers/cluster-servers.js";
import { letteredPrompt, routedCompletion } from "../helpers/routed-completion.js";

// `armature router` as its own process: frontends started with --router remote ask it where each
// request goes; it routes by the KV events it hears from the worker processes.
let servers: ClusterServers;
before(async () => {
  servers = await startClusterServers();
});
after(() => servers.stop());

const BLOCK = 8;

test("a router process routes for a frontend by KV overlap, and the frontend outlives it", async () => {
  const cluster = servers.flags;
  const mocker = ["--engine", "mocker", "--speedup-ratio", "100", "--block-size", String(BLOCK)];
  const workerA = await startArmature(["worker", ...cluster, ...mocker]);
  const workerB = await startArmature(["worker", ...cluster, ...mocker]);
  const router = await startArmature(["router", ...cluster]);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0", "--router", "remote"]);
  try {
    const [a, b] = (await waitForInstances(frontend.url, 2)).map((w) => w.id) as [string, string];
    const send = async (letters: string, pinned?: string): Promise<{ worker: string; overlap: string }> => {
      const served = await routedCompletion(frontend.url, "armature-mocker", letteredPrompt(letters, BLOCK), pinned);
      await new Promise((r) => setTimeout(r, 500)); // KV events reach the router process over NATS
      return served;
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
