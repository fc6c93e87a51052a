import assert from "node:assert/strict";
import { test } from "node:test";
import { startEmbeddedDeployment } from "../../src/cli/embedded-deployment.js";
import { resolveServeOptions } from "../../src/cli/serve-options.js";
import { silentLogger } from "../../src/observability/index.js";

// Conditional disaggregation: which requests a split deployment prefills on the decode worker.
async function withDeployment(flags: string[], body: (url: string) => Promise<void>): Promise<void> {
  const options = resolveServeOptions(
    ["--engine", "mocker", "--speedup-ratio", "100", "--prefill", "1", "--decode", "1", "--port", "0", ...flags],
    {},
  );
  const deployment = await startEmbeddedDeployment(options, silentLogger);
  try {
    await body(deployment.frontend.url);
  } finally {
    await deployment.close(0);
  }
}

async function prefilledBy(url: string, promptLength: number): Promise<string | null> {
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "armature-mocker", prompt: "x".repeat(promptLength), max_tokens: 2 }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.json();
  return res.headers.get("x-armature-prefill-worker");
}

const outcomes = async (url: string): Promise<string> =>
  (await (await fetch(`${url}/metrics`)).text())
    .split("\n")
    .filter((line) => line.startsWith("armature_disagg_prefill_requests_total{"))
    .join("\n");

test("prompts with fewer uncached tokens than --disagg-threshold are prefilled on the decode worker", () =>
  withDeployment(["--disagg-threshold", "200"], async (url) => {
    assert.equal(await prefilledBy(url, 50), null);
    assert.match((await prefilledBy(url, 400)) ?? "", /^worker-/);
    const metrics = await outcomes(url);
    assert.match(metrics, /where="local_short_prompt"\} 1/);
    assert.match(metrics, /where="remote"\} 1/);
  }));

test("a transfer the prefill worker's cost model says is too slow is not made (--disagg-max-transfer-ms)", async () => {
  // 131,072 modelled bytes per token: 400 tokens are 52 MB, far more than 0.001 ms of any link.
  await withDeployment(["--disagg-max-transfer-ms", "0.001"], async (url) => {
    assert.equal(await prefilledBy(url, 400), null);
    assert.match(await outcomes(url), /where="local_transfer_cost"\} 1/);
  });
  await withDeployment(["--disagg-max-transfer-ms", "1000000"], async (url) => {
    assert.match((await prefilledBy(url, 400)) ?? "", /^worker-/);
  });
});
