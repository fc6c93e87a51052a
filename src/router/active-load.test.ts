import assert from "node:assert/strict";
import { test } from "node:test";
import { createEmbeddedRuntime, VirtualClock } from "../runtime/index.js";
import { ActiveLoad } from "./active-load.js";

const settle = () => new Promise((r) => setTimeout(r, 10));

test("router replicas see each other's bookings and route as one", async () => {
  const runtime = createEmbeddedRuntime();
  const a = new ActiveLoad({ routerId: "a", clock: runtime.clock, events: runtime.events });
  const b = new ActiveLoad({ routerId: "b", clock: runtime.clock, events: runtime.events });
  a.add("r1", "w1", 100, 8);
  await settle();
  assert.deepEqual(b.of("w1"), { prefillTokens: 100, decodeBlocks: 8 });
  a.prefillDone("r1");
  b.add("r1", "w1", 10, 1); // the same request id on another replica is another request
  await settle();
  assert.deepEqual(a.of("w1"), { prefillTokens: 10, decodeBlocks: 9 });
  assert.deepEqual(b.of("w1"), { prefillTokens: 10, decodeBlocks: 9 });
  a.free("r1");
  b.free("r1");
  await settle();
  assert.deepEqual(
    [a.of("w1"), b.of("w1")],
    [
      { prefillTokens: 0, decodeBlocks: 0 },
      { prefillTokens: 0, decodeBlocks: 0 },
    ],
  );
  a.close();
  b.close();
  await runtime.close();
});

test("bookings older than the stale limit are dropped", async () => {
  const clock = new VirtualClock();
  const load = new ActiveLoad({ routerId: "a", clock, staleMs: 300_000 });
  load.add("r1", "w1", 5, 1);
  await clock.advance(200_000);
  assert.deepEqual(load.of("w1"), { prefillTokens: 5, decodeBlocks: 1 });
  await clock.advance(200_000);
  assert.deepEqual(load.of("w1"), { prefillTokens: 0, decodeBlocks: 0 });
});
