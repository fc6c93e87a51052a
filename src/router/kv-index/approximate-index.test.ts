import assert from "node:assert/strict";
import { test } from "node:test";
import { hashBlocks } from "../../protocol/index.js";
import { VirtualClock } from "../../runtime/index.js";
import { ApproximateIndex } from "./approximate-index.js";

const prompt = (n: number, offset = 0) => Array.from({ length: n }, (_, i) => i + offset);
const match = (index: ApproximateIndex, tokens: number[]) =>
  Object.fromEntries(index.findMatches(hashBlocks(tokens, 4).local).scores);

test("a routing decision counts as the worker's cached blocks until its TTL passes", async () => {
  const clock = new VirtualClock();
  const index = new ApproximateIndex({ clock, blockSize: 4, ttlMs: 120_000 });
  index.recordDecision("w1", prompt(10));
  assert.deepEqual(match(index, prompt(12)), { w1: 2 });
  await clock.advance(119_000);
  assert.deepEqual(match(index, prompt(12)), { w1: 2 });
  await clock.advance(2_000);
  assert.deepEqual(match(index, prompt(12)), {});
  assert.equal(index.size, 0);
});

test("a shared prefix stays while a newer decision still names it", async () => {
  const clock = new VirtualClock();
  const index = new ApproximateIndex({ clock, blockSize: 4, ttlMs: 1000 });
  index.recordDecision("w1", prompt(8));
  await clock.advance(600);
  index.recordDecision("w1", [...prompt(8), ...prompt(4, 100)]);
  await clock.advance(600);
  assert.deepEqual(match(index, [...prompt(8), ...prompt(4, 100)]), { w1: 3 }, "the first decision expired, its blocks live on");
});

test("past the size cap the oldest decisions go until 80% remain", () => {
  const clock = new VirtualClock();
  const index = new ApproximateIndex({ clock, blockSize: 4, maxBlocks: 10 });
  for (let i = 0; i < 6; i++) index.recordDecision(`w${i}`, prompt(8, i * 1000));
  assert.ok(index.size <= 10 && index.size >= 6, `size ${index.size}`);
  assert.deepEqual(match(index, prompt(8, 0)), {}, "the oldest was pruned");
  assert.deepEqual(match(index, prompt(8, 5000)), { w5: 2 });
});
