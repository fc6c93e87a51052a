import assert from "node:assert/strict";
import { test } from "node:test";
import { startEmbeddedDeployment } from "../../src/cli/embedded-deployment.js";
import { resolveServeOptions } from "../../src/cli/serve-options.js";
import { silentLogger } from "../../src/observability/index.js";
import { letteredPrompt, routedCompletion } from "../helpers/routed-completion.js";

// Dynamo's black-box routing check (tests/router/common.py::_test_router_decisions), over HTTP with
// two mocker workers and block size 8: blocks A–G are 8 distinct tokens each.
const BLOCK = 8;

test("the kv router sends a request where its prefix is cached, ties to the smaller tree", async () => {
  const options = resolveServeOptions(
    [
      "--engine",
      "mocker",
      "--workers",
      "2",
      "--router",
      "kv",
      "--block-size",
      String(BLOCK),
      "--port",
      "0",
      "--speedup-ratio",
      "100",
    ],
    {},
  );
  const deployment = await startEmbeddedDeployment(options, silentLogger);
  const [a, b] = deployment.workers.map((w) => w.id) as [string, string];
  const overlaps: string[] = [];
  const send = async (letters: string, pinned?: string): Promise<string> => {
    const served = await routedCompletion(deployment.frontend.url, "armature-mocker", letteredPrompt(letters, BLOCK), pinned);
    overlaps.push(served.overlap);
    await new Promise((r) => setTimeout(r, 30)); // let the KV events reach the index
    return served.worker;
  };
  try {
    await send("AB", a);
    await send("ACD", a);
    await send("ACE", b);
    assert.equal(await send("ACDF"), a, "3 cached blocks on a against 2 on b");
    assert.equal(await send("ACG"), b, "2 blocks each; b's tree (3 blocks) is smaller than a's (5)");
    assert.deepEqual(overlaps.slice(-2), ["3", "2"], "x-armature-overlap-blocks names the cached blocks");
    const metrics = await (await fetch(`${deployment.frontend.url}/metrics`)).text();
    assert.match(metrics, /armature_router_kv_cache_events_applied\{event_type="stored",status="ok"\} \d+/);
    assert.match(metrics, /armature_frontend_kv_hit_rate_bucket/);
    // Two requests were routed by the policy; the three pinned ones were not.
    for (const phase of ["block_hashing", "indexer_find_matches", "scheduling"]) {
      assert.match(metrics, new RegExp(`armature_router_overhead_${phase}_ms_count 2`));
    }
  } finally {
    await deployment.close(1000);
  }
});
