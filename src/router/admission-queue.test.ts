import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { test } from "node:test";
import { AdmissionQueue } from "./admission-queue.js";

/** How many abort listeners a signal has, through Node's own accounting of event targets. */
function abortListeners(signal: AbortSignal): number {
  return getEventListeners(signal, "abort").length;
}

test("a request woken too early many times holds one abort listener, and none once admitted", async () => {
  // Regression: every wake added another abort listener to the request's signal.
  const queue = new AdmissionQueue(10);
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
  const queue = new AdmissionQueue(1);
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
