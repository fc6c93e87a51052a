import assert from "node:assert/strict";
import { test } from "node:test";
import { modelledKvCosts, onboardingPays } from "./tier-costs.js";
import { polynomialTimingModel } from "./timing-model.js";

test("the mocker's modelled costs: a full batch's prefill rate and each present tier's bandwidth", () => {
  // Dynamo's polynomial at 8,192 tokens: 4.209989e-7 × 8192² + 1.518344e-2 × 8192 + 16.50142
  // = 169.137 ms, so 48,434 tokens/s; at a speed-up of 10, ten times both.
  const costs = modelledKvCosts(
    polynomialTimingModel(10),
    8192,
    { host: 25, disk: 5, object: 1 },
    { host: true, disk: true, object: false },
    10,
  );
  assert.ok(Math.abs((costs.prefillTokensPerSecond ?? 0) - 484_341) < 1, `${costs.prefillTokensPerSecond}`);
  assert.deepEqual(costs.onboardBytesPerSecond, { host_pinned: 250e9, disk: 50e9 });
  // 131,072 bytes a token at 484,341 tokens/s need 63.5 GB/s (at this speed-up) to pay.
  assert.equal(onboardingPays(costs, "host", 131_072), true);
  assert.equal(onboardingPays(costs, "disk", 131_072), false);
  // A tier without a bandwidth is not judged: it is read.
  assert.equal(onboardingPays(costs, "object", 131_072), true);
  // With a fifth of the KV bytes a token, the disk pays too.
  assert.equal(onboardingPays(costs, "disk", 26_000), true);
});
