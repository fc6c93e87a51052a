import assert from "node:assert/strict";
import { test } from "node:test";
import { toTokenLogprob, ZERO_PROBABILITY_LOGPROB } from "./sampled-tokens.js";

// node-llama-cpp hands back a step's probabilities sorted, most likely first.
const step = new Map([
  [5, 0.5],
  [3, 0.25],
  [9, 0.25],
  [2, 0],
]);

test("the chosen token's natural-log probability and the likeliest `top` of the step", () => {
  assert.deepEqual(toTokenLogprob(step, 3, 2), {
    logprob: Math.log(0.25),
    top: [
      { token: 5, logprob: Math.log(0.5) },
      { token: 3, logprob: Math.log(0.25) },
    ],
  });
  assert.deepEqual(toTokenLogprob(step, 5, 0), { logprob: Math.log(0.5), top: [] });
});

test("a probability of 0, or a token missing from the step, is written as vLLM writes -inf", () => {
  assert.equal(ZERO_PROBABILITY_LOGPROB, -9999);
  assert.equal(toTokenLogprob(step, 2, 0).logprob, -9999);
  assert.equal(toTokenLogprob(step, 77, 0).logprob, -9999);
  assert.deepEqual(toTokenLogprob(step, 5, 10).top.at(-1), { token: 2, logprob: -9999 });
});

test("a probability that rounds above 1 is still a log-probability of at most 0", () => {
  assert.equal(toTokenLogprob(new Map([[1, 1.0000001]]), 1, 1).logprob, 0);
});
