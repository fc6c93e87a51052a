import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { test } from "node:test";
import { ArmatureError } from "../protocol/index.js";
import { VirtualClock } from "../runtime/index.js";
import { AdmissionQueue, type QueueTicket, type ShedReason } from "./admission-queue.js";

/** How many abort listeners a signal has, through Node's own accounting of event targets. */
function abortListeners(signal: AbortSignal): number {
  return getEventListeners(signal, "abort").length;
}

test("a request woken too early many times holds one abort listener, and none once admitted", async () => {
  // Regression: every wake added another abort listener to the request's signal.
  const queue = new AdmissionQueue({ capacity: 10 });
  const controller = new AbortController();
  let free = false;
  const admitted = queue.admit(() => free, controller.signal);
  for (let i = 0; i < 20; i++) {
    queue.notify(); // capacity looked free, but canRun() still says no
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(abortListeners(controller.signal), 1);
  assert.equal(queue.length, 1, "it kept its place");
  free = true;
  queue.notify();
  await admitted;
  assert.equal(abortListeners(controller.signal), 0);
  assert.equal(queue.length, 0);
});

test("an already-aborted request is refused at once and takes no place", async () => {
  // Regression: it was parked, holding a place until some later wake.
  const queue = new AdmissionQueue({ capacity: 1 });
  const controller = new AbortController();
  controller.abort(new Error("client went away"));
  await assert.rejects(
    queue.admit(() => false, controller.signal),
    /client went away/,
  );
  assert.equal(queue.length, 0);
  // The one place is still there for a live request.
  const live = new AbortController();
  const waiting = queue.admit(() => false, live.signal);
  assert.equal(queue.length, 1);
  live.abort(new Error("gave up"));
  await assert.rejects(waiting, /gave up/);
  assert.equal(queue.length, 0);
});

/**
 * A queue whose callers are admitted one at a time as `release()` frees a slot: `park` queues a
 * named request and records, in order, when each one was admitted or refused (with its code).
 */
function slots(options: { capacity: number; clock?: VirtualClock; leadTime?: () => number }) {
  const shed: { reason: ShedReason; priority: number }[] = [];
  const queue = new AdmissionQueue({ ...options, onShed: (reason, priority) => shed.push({ reason, priority }) });
  let free = 0;
  const canRun = (): boolean => free > 0;
  const log: string[] = [];
  const done: Promise<void>[] = [];
  return {
    queue,
    log,
    shed,
    park(name: string, ticket: QueueTicket, signal = new AbortController().signal): void {
      done.push(
        queue.admit(canRun, signal, ticket).then(
          () => {
            free--;
            log.push(name);
          },
          (error: { code?: string }) => {
            log.push(`${name}:${error.code}`);
          },
        ),
      );
    },
    async release(): Promise<void> {
      free++;
      queue.notify(canRun);
      await settle();
    },
    settled: () => Promise.all(done),
  };
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

test("waiters run by priority (lower first), then by deadline (sooner first, none last), then by arrival", async () => {
  const clock = new VirtualClock();
  const q = slots({ capacity: 10, clock });
  q.park("a p5", { priority: 5 });
  q.park("b p0 no deadline", {});
  q.park("c p0 deadline 900", { priority: 0, deadline: 900 });
  q.park("d p0 deadline 300", { deadline: 300 });
  q.park("e p-1", { priority: -1 });
  q.park("f p0 no deadline", { priority: 0 });
  await settle();
  assert.equal(q.queue.length, 6);
  for (let i = 0; i < 6; i++) await q.release();
  await q.settled();
  assert.deepEqual(q.log, ["e p-1", "d p0 deadline 300", "c p0 deadline 900", "b p0 no deadline", "f p0 no deadline", "a p5"]);
  assert.deepEqual(q.shed, []);
});

test("a full queue refuses a request that does not outrank its last waiter, and one that does displaces it", async () => {
  const q = slots({ capacity: 2 });
  q.park("x p1", { priority: 1 });
  q.park("y p1", { priority: 1 });
  await settle();
  q.park("z p1", { priority: 1 }); // ties lose to earlier arrivals: refused
  await settle();
  assert.deepEqual(q.log, ["z p1:ROUTER_OVERLOADED"]);
  q.park("h p0", { priority: 0 }); // outranks y, the last: y is shed, h takes a place
  await settle();
  assert.deepEqual(q.log, ["z p1:ROUTER_OVERLOADED", "y p1:ROUTER_OVERLOADED"]);
  assert.equal(q.queue.length, 2);
  await q.release();
  await q.release();
  await q.settled();
  assert.deepEqual(q.log.slice(2), ["h p0", "x p1"]);
  assert.deepEqual(q.shed, [
    { reason: "full", priority: 1 },
    { reason: "displaced", priority: 1 },
  ]);
});

test("a waiter is shed once its deadline comes sooner than the lead time; one that can still make it stays", async () => {
  const clock = new VirtualClock();
  const q = slots({ capacity: 10, clock, leadTime: () => 100 });
  q.park("tight", { deadline: 250 });
  q.park("loose", { deadline: 1000 });
  await settle();
  await clock.advance(149);
  await settle();
  assert.deepEqual(q.log, [], "at 149 ms, 149 + 100 < 250: still waiting");
  await clock.advance(1);
  await settle();
  assert.deepEqual(q.log, ["tight:ROUTER_DEADLINE_UNREACHABLE"], "at 150 ms, 150 + 100 reaches 250");
  assert.equal(q.queue.length, 1);
  await q.release();
  await q.settled();
  assert.deepEqual(q.log, ["tight:ROUTER_DEADLINE_UNREACHABLE", "loose"]);
  assert.deepEqual(q.shed, [{ reason: "deadline", priority: 0 }]);
});

test("the deadline check follows the lead time as it changes", async () => {
  const clock = new VirtualClock();
  let lead = 0;
  const q = slots({ capacity: 10, clock, leadTime: () => lead });
  q.park("r", { deadline: 500 });
  await settle();
  lead = 400; // recent requests got slower: at 100 ms the deadline is out of reach
  await clock.advance(99);
  await settle();
  assert.deepEqual(q.log, [], "the check armed at arrival (for 500 ms) has not fired");
  await clock.advance(401);
  await settle();
  assert.deepEqual(q.log, ["r:ROUTER_DEADLINE_UNREACHABLE"]);
});

test("a request whose deadline is already out of reach is refused if it would wait, admitted if a worker is free", async () => {
  const clock = new VirtualClock(1000);
  const queue = new AdmissionQueue({ capacity: 10, clock, leadTime: () => 50 });
  const signal = new AbortController().signal;
  await assert.rejects(
    queue.admit(() => false, signal, { deadline: 1040 }),
    { code: "ROUTER_DEADLINE_UNREACHABLE" },
  );
  assert.equal(queue.length, 0);
  await queue.admit(() => true, signal, { deadline: 1040 });
});

test("a displaced or shed waiter leaves no abort listener behind", async () => {
  const clock = new VirtualClock();
  const queue = new AdmissionQueue({ capacity: 1, clock });
  const low = new AbortController();
  const waiting = queue.admit(() => false, low.signal, { priority: 9, deadline: 10_000 });
  const high = new AbortController();
  const second = queue.admit(() => false, high.signal, { priority: 0, deadline: 50 });
  await assert.rejects(waiting, { code: "ROUTER_OVERLOADED" });
  assert.equal(abortListeners(low.signal), 0);
  const shed = assert.rejects(second, { code: "ROUTER_DEADLINE_UNREACHABLE" });
  await clock.advance(50);
  await shed;
  assert.equal(abortListeners(high.signal), 0);
  assert.equal(clock.pendingTimers, 0, "the displaced waiter's deadline check was cancelled");
});

test("a request whose own deadline passes while it waits is shed as unreachable, not timed out at a worker", async () => {
  const clock = new VirtualClock();
  const shed: ShedReason[] = [];
  const queue = new AdmissionQueue({ capacity: 4, clock, onShed: (reason) => shed.push(reason) });
  const controller = new AbortController();
  const waiting = queue.admit(() => false, controller.signal, { deadline: 1000 });
  controller.abort(Object.assign(new Error("deadline"), { code: "REQUEST_TIMEOUT" }));
  // A plain error with that code is not the frontend's timeout: it passes through as it came.
  await assert.rejects(waiting, /deadline/);
  const timed = new AbortController();
  const second = queue.admit(() => false, timed.signal, { deadline: 1000 });
  timed.abort(new ArmatureError("REQUEST_TIMEOUT", "the request took longer than its deadline"));
  await assert.rejects(second, { code: "ROUTER_DEADLINE_UNREACHABLE" });
  assert.deepEqual(shed, ["deadline"]);
  assert.equal(queue.length, 0);
});

test("a request aborted just after being woken, before it ran, passes its wake on and does not hang", async () => {
  const queue = new AdmissionQueue({ capacity: 4 });
  let free = false;
  const canRun = (): boolean => free;
  const first = new AbortController();
  const a = queue.admit(canRun, first.signal);
  const b = queue.admit(canRun, new AbortController().signal);
  free = true;
  queue.notify(canRun); // wakes a; before a resumes, its client goes away
  first.abort(new Error("client left"));
  await assert.rejects(a, /client left/);
  await b; // a's wake went to b
  assert.equal(queue.length, 0);
});
