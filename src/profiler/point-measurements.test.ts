import assert from "node:assert/strict";
import { test } from "node:test";
import { interTokenWindow, median } from "./point-measurements.js";
import type { RequestTrace } from "./sweep-requests.js";

/** A request that started at 0 and got one token at each of `times`. */
const trace = (...times: number[]): RequestTrace => ({
  startMs: 0,
  deltas: times.map((atMs) => ({ atMs, tokens: 1 })),
  endMs: times.at(-1)!,
});

test("ITL counts only the window where every request decodes", () => {
  // The second request is prefilled while the first decodes slowly beside it (gaps of 30 ms); from
  // 60 ms both decode every 10 ms until the first ends at 90 ms.
  const result = interTokenWindow([trace(0, 30, 60, 70, 80, 90), trace(60, 70, 80, 90, 100, 110)]);
  assert.equal(result.steady, true);
  assert.equal(result.itlMs, 10);
  assert.equal(result.tokensPerSecond, 200, "6 tokens of both requests in 30 ms");
});

test("without such a window every gap after the first token counts, and a delta of 2 tokens is 2 gaps' worth", () => {
  const result = interTokenWindow([
    trace(0, 10, 20),
    {
      startMs: 0,
      deltas: [
        { atMs: 30, tokens: 1 },
        { atMs: 50, tokens: 2 },
      ],
      endMs: 50,
    },
  ]);
  assert.equal(result.steady, false);
  assert.equal(result.itlMs, (10 + 10 + 20) / 4);
  assert.equal(result.tokensPerSecond, (4 / 50) * 1000);
});

test("median takes the middle value, or the mean of the middle two", () => {
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 2.5);
});
