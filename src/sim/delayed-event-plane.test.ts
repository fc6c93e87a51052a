import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryEventPlane, VirtualClock } from "../runtime/index.js";
import { DelayedEventPlane } from "./delayed-event-plane.js";

test("messages arrive after their subject's delay on the clock, in publish order", async () => {
  const clock = new VirtualClock();
  const plane = new DelayedEventPlane(new MemoryEventPlane(), clock, (subject) => (subject.startsWith("slow.") ? 50 : 0));
  const heard: string[] = [];
  plane.subscribe(">", (payload, subject) => heard.push(`${subject}=${String(payload)}@${clock.now()}`));
  await plane.publish("slow.a", 1);
  await plane.publish("slow.b", 2);
  await plane.publish("fast.c", 3);
  await clock.advance(20);
  await plane.publish("slow.a", 4);
  await clock.advance(29);
  assert.deepEqual(heard, ["fast.c=3@0"], "nothing slow before its 50 ms");
  await clock.advance(1);
  assert.deepEqual(heard, ["fast.c=3@0", "slow.a=1@50", "slow.b=2@50"]);
  await clock.advance(20);
  assert.deepEqual(heard.at(-1), "slow.a=4@70");
  assert.equal(clock.pendingTimers, 0, "one timer per instant, all fired");
});

test("a closed plane drops what is still on its way", async () => {
  const clock = new VirtualClock();
  const plane = new DelayedEventPlane(new MemoryEventPlane(), clock, () => 10);
  const heard: unknown[] = [];
  plane.subscribe("x", (payload) => heard.push(payload));
  await plane.publish("x", 1);
  await plane.close();
  await clock.runUntilIdle();
  assert.deepEqual(heard, []);
});
