import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startArmature } from "../helpers/armature-process.js";
import { type ClusterServers, startClusterServers, waitForInstances } from "../helpers/cluster-servers.js";
import { letteredPrompt } from "../helpers/routed-completion.js";

// The dashboard of an `armature frontend` process: its workers are other processes on NATS and
// etcd, and /v1/fleet shows what the frontend knows of them (discovery, load reports, KV events).
let servers: ClusterServers;
before(async () => {
  servers = await startClusterServers();
});
after(() => servers.stop());

const BLOCK = 8;

interface Fleet {
  workers: { id: string; role: string; state: string; kv: { blockSize: number; indexedBlocks: { device?: number } | null } }[];
  traffic: { requests: number };
  routing: {
    routed: number;
    byWorker: Record<string, { requests: number }>;
    recent: { workerId: string; overlapBlocks: number }[];
  };
}

const fleet = async (url: string): Promise<Fleet> => (await (await fetch(`${url}/v1/fleet`)).json()) as Fleet;

test("armature frontend serves the dashboard, and /v1/fleet shows its workers, their cached blocks and its routing", async () => {
  const cluster = servers.flags;
  const mocker = ["--engine", "mocker", "--speedup-ratio", "100", "--block-size", String(BLOCK)];
  const workers = await Promise.all([
    startArmature(["worker", ...cluster, ...mocker]),
    startArmature(["worker", ...cluster, ...mocker]),
  ]);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0"]);
  try {
    const ids = (await waitForInstances(frontend.url, 2)).map((w) => w.id).sort();
    const page = await fetch(`${frontend.url}/dashboard`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
    assert.match(await page.text(), /<script src="\/dashboard\/uPlot\.iife\.min\.js"><\/script>/);
    assert.equal((await fetch(`${frontend.url}/dashboard/`)).status, 200, "the page with a trailing slash too");
    assert.equal((await fetch(`${frontend.url}/dashboard/missing.js`)).status, 404);
    assert.equal((await fetch(`${frontend.url}/v1/fleet`, { method: "POST" })).status, 405);

    const idle = await fleet(frontend.url);
    assert.deepEqual(idle.workers.map((w) => w.id).sort(), ids);
    assert.ok(idle.workers.every((w) => w.role === "aggregated" && w.kv.blockSize === BLOCK));
    assert.equal(idle.traffic.requests, 0);

    // Four full blocks of prompt, pinned to one worker, then the same prompt again (routed by the KV router).
    const [a] = ids as [string];
    const prompt = letteredPrompt("ABCD", BLOCK);
    const complete = (pinned?: string) =>
      fetch(`${frontend.url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "armature-mocker",
          prompt,
          max_tokens: 1,
          ...(pinned ? { nvext: { backend_instance_id: pinned } } : {}),
        }),
      }).then((res) => res.json());
    await complete(a);
    let seen = await fleet(frontend.url);
    for (let i = 0; i < 50 && (seen.workers.find((w) => w.id === a)?.kv.indexedBlocks?.device ?? 0) < 4; i++) {
      await new Promise((r) => setTimeout(r, 100)); // the KV events come over NATS
      seen = await fleet(frontend.url);
    }
    assert.equal(seen.workers.find((w) => w.id === a)?.kv.indexedBlocks?.device, 4);
    await complete();
    seen = await fleet(frontend.url);
    assert.equal(seen.traffic.requests, 2);
    assert.equal(seen.routing.routed, 2);
    assert.deepEqual(seen.routing.byWorker, { [a]: { requests: 2, overlapShare: 0.5 } });
    assert.deepEqual(
      seen.routing.recent.map((r) => [r.workerId, r.overlapBlocks]),
      [
        [a, 4],
        [a, 0],
      ],
    );
  } finally {
    await Promise.all([frontend.stop(), ...workers.map((w) => w.stop())]);
  }
});
