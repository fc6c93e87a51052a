import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startArmature } from "../helpers/armature-process.js";
import { type ClusterServers, startClusterServers, waitForInstances } from "../helpers/cluster-servers.js";
import { freePort } from "../helpers/free-port.js";

// `armature worker --metrics-port`: a worker process answers Prometheus on its own port, so the KV
// block manager's metrics (which live on the llama.cpp workers) reach a scrape in a distributed
// deployment too.
let servers: ClusterServers;
before(async () => {
  servers = await startClusterServers();
});
after(() => servers.stop());

/** The sum of a metric's samples in a Prometheus text exposition whose lines match `labels`. */
function sample(text: string, name: string, labels: RegExp = /.*/): number {
  return text
    .split("\n")
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .filter((line) => labels.test(line))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}

test("a llama.cpp worker serves its KV block manager's metrics on --metrics-port, and /health", async () => {
  const port = await freePort();
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-worker-metrics-"));
  const env = { ARMATURE_CACHE_DIR: cacheDir };
  const worker = await startArmature(
    ["worker", ...servers.flags, "--kv-host-bytes", "16MiB", "--metrics-port", String(port)],
    env,
  );
  const frontend = await startArmature(["frontend", ...servers.flags, "--port", "0"], env);
  try {
    assert.match(worker.output(), new RegExp(`metrics at http://127\\.0\\.0\\.1:${port}/metrics`));
    await waitForInstances(frontend.url, 1);
    const metricsUrl = `http://127.0.0.1:${port}/metrics`;
    const before = await (await fetch(metricsUrl)).text();
    assert.equal(sample(before, "armature_kvbm_offload_blocks_total"), 0);

    // A prompt of several 16-token blocks; when the request ends its blocks are offloaded to the host tier.
    const prompt = "The weather is good today and the market is open and the robot met a cat by the sea. ".repeat(4);
    const res = await fetch(`${frontend.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "armature-tiny", prompt, max_tokens: 4, temperature: 0 }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.json();

    let after = "";
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      after = await (await fetch(metricsUrl)).text();
      if (sample(after, "armature_kvbm_offload_blocks_total") > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(sample(after, "armature_kvbm_offload_blocks_total", /to="host"/) > 0, after);
    assert.ok(sample(after, "armature_kvbm_tier_blocks", /tier="host"/) > 0);
    assert.match(after, /^# TYPE armature_plane_messages_dropped gauge$/m);

    const health = await fetch(`http://127.0.0.1:${port}/health`);
    assert.deepEqual([health.status, await health.json()], [200, { status: "ok" }]);
    assert.equal((await fetch(`http://127.0.0.1:${port}/v1/models`)).status, 404);
    assert.equal((await fetch(metricsUrl, { method: "POST" })).status, 405);
  } finally {
    await frontend.stop();
    assert.equal(await worker.stop("SIGTERM"), 0, worker.output());
  }
});
