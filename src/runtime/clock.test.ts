import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
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

test("time stands still while held work is out, however long it takes in real time", async () => {
  const clock = new VirtualClock();
  const order: string[] = [];
  void clock.sleep(10).then(() => order.push(`timer@${clock.now()}`));
  const io = new Promise<string>((resolve) => setTimeout(() => resolve("opened"), 20));
  void clock.hold(io).then((value) => order.push(`${value}@${clock.now()}`));
  await clock.runUntilIdle();
  assert.deepEqual(order, ["opened@0", "timer@10"]);
  await assert.rejects(clock.hold(Promise.reject(new Error("failed"))), /failed/);
  await clock.advance(5);
  assert.equal(clock.now(), 15, "a failed hold releases time too");
});

test("a virtual sleep that fired lets go of its signal", async () => {
  // Regression: every fired sleep left its abort listener on the signal, so a loop sleeping on one
  // long-lived signal (a worker's load reports) piled up listeners for as long as it ran.
  const clock = new VirtualClock();
  const controller = new AbortController();
  for (let i = 0; i < 50; i++) {
    const sleeping = clock.sleep(10, controller.signal);
    await clock.advance(10);
    await sleeping;
  }
  assert.equal(getEventListeners(controller.signal, "abort").length, 0);
});

test("a virtual timer fires at its time; a cancelled one never fires, and cancelling after it fired changes nothing", async () => {
  const clock = new VirtualClock();
  const fired: string[] = [];
  const cancelA = clock.timer(100, () => fired.push(`a@${clock.now()}`));
  const cancelB = clock.timer(50, () => fired.push(`b@${clock.now()}`));
  clock.timer(200, () => fired.push(`c@${clock.now()}`));
  assert.equal(clock.pendingTimers, 3);
  cancelB();
  cancelB();
  assert.equal(clock.pendingTimers, 2);
  await clock.advance(150);
  assert.deepEqual(fired, ["a@100"]);
  cancelA();
  assert.equal(clock.pendingTimers, 1);
  await clock.runUntilIdle();
  assert.deepEqual(fired, ["a@100", "c@200"]);
  assert.equal(clock.pendingTimers, 0);
});
