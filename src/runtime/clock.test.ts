import assert from "node:assert/strict";
import { test } from "node:test";
import { VirtualClock } from "./clock.js";

test("virtual clock fires sleepers in deadline order without real waiting", async () => {
  const clock = new VirtualClock();
  const order: string[] = [];
  void clock.sleep(300).then(() => order.push(`b@${clock.now()}`));
  void clock.sleep(100).then(() => order.push(`a@${clock.now()}`));
  await clock.advance(250);
  assert.deepEqual(order, ["a@100"]);
  await clock.runUntilIdle();
  assert.deepEqual(order, ["a@100", "b@300"]);
});

test("an aborted virtual sleep rejects and leaves no timer behind", async () => {
  const clock = new VirtualClock();
  const controller = new AbortController();
  const sleeping = clock.sleep(1000, controller.signal);
  controller.abort(new Error("stop"));
  await assert.rejects(sleeping, /stop/);
  assert.equal(clock.pendingTimers, 0);
});
