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

test("many sleepers fire in deadline order, equal deadlines in the order they were set", async () => {
  const clock = new VirtualClock();
  const fired: number[] = [];
  const deadlines = Array.from({ length: 200 }, (_, i) => (i * 7919) % 101);
  deadlines.forEach((ms, i) => void clock.sleep(ms).then(() => fired.push(i)));
  await clock.runUntilIdle();
  const expected = deadlines
    .map((ms, i) => ({ ms, i }))
    .sort((a, b) => a.ms - b.ms || a.i - b.i)
    .map((x) => x.i);
  assert.deepEqual(fired, expected);
  assert.equal(clock.now(), 100);
});
