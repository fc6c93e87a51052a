import assert from "node:assert/strict";
import { test } from "node:test";
import { startEmbeddedDeployment } from "../../src/cli/embedded-deployment.js";
import { resolveServeOptions } from "../../src/cli/serve-options.js";
import { silentLogger } from "../../src/observability/index.js";
import { letteredPrompt } from "../helpers/routed-completion.js";

const BLOCK = 8;

// Two mocker workers with 8 device blocks and 64 host blocks each: a prompt of 6 blocks takes 6
// device blocks, so a second such prompt pushes 4 of the first off the device (its head stays: blocks
// are freed tail first) to the host tier, where all 6 stay.
test("a prefix a worker kept on its host tier draws the request there, and comes back as cached tokens", async () => {
  const options = resolveServeOptions(
    ["--engine", "mocker", "--workers", "2", "--block-size", String(BLOCK), "--kv-blocks", "8", "--host-kv-blocks", "64"],
    {},
  );
  const deployment = await startEmbeddedDeployment({ ...options, port: 0, speedupRatio: 100 }, silentLogger);
  const [a, b] = deployment.workers.map((w) => w.id) as [string, string];
  const send = async (letters: string, pinned?: string) => {
    const res = await fetch(`${deployment.frontend.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "armature-mocker",
        prompt: letteredPrompt(letters, BLOCK),
        max_tokens: 1,
        ...(pinned ? { nvext: { backend_instance_id: pinned } } : {}),
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { usage: { prompt_tokens_details?: { cached_tokens?: number } } };
    await new Promise((r) => setTimeout(r, 30)); // let the KV events reach the index
    return {
      worker: res.headers.get("x-armature-worker"),
      overlap: Number(res.headers.get("x-armature-overlap-blocks")),
      cached: body.usage.prompt_tokens_details?.cached_tokens ?? 0,
    };
  };
  try {
    await send("ABCDEF", a);
    await send("GHIJKL", a); // a's device keeps blocks A and B of the first prompt; its host keeps all
    await send("ABN", b); // b caches A and B on its device too, and has the smaller tree
    const served = await send("ABCDEFM");
    assert.equal(served.worker, a, "2 device blocks each; a's 4 more on its host decide (a device-only tie goes to b)");
    assert.equal(served.overlap, 2, "x-armature-overlap-blocks counts device blocks");
    assert.equal(served.cached, 6 * BLOCK, "blocks A–F served from cache: A, B from the device, C–F from the host");
    const metrics = await (await fetch(`${deployment.frontend.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`armature_frontend_host_cached_tokens_total\\{model="armature-mocker"\\} ${4 * BLOCK}\\b`));
  } finally {
    await deployment.close(1000);
  }
});
