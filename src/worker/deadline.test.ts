import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { test } from "node:test";
import { isArmatureError } from "../protocol/index.js";
import { VirtualClock } from "../runtime/index.js";
import { callSignal } from "./deadline.js";

test("without a deadline a call runs under its caller's own signal", () => {
  const caller = new AbortController();
  const { signal } = callSignal(new VirtualClock(), { signal: caller.signal }, undefined);
  assert.equal(signal, caller.signal);
});

test("a call's signal aborts with REQUEST_TIMEOUT when its deadline passes on the clock", async () => {
  const clock = new VirtualClock();
  const { signal } = callSignal(clock, { signal: new AbortController().signal }, 500);
  await clock.advance(499);
  assert.equal(signal.aborted, false);
  await clock.advance(1);
  assert.ok(isArmatureError(signal.reason) && signal.reason.code === "REQUEST_TIMEOUT", String(signal.reason));
});

test("a call's signal follows its caller's, with the caller's reason", () => {
  const caller = new AbortController();
  const { signal } = callSignal(new VirtualClock(), { signal: caller.signal }, 500);
  const reason = new Error("client left");
  caller.abort(reason);
  assert.equal(signal.reason, reason);
  const already = callSignal(new VirtualClock(), { signal: caller.signal }, 500);
  assert.equal(already.signal.reason, reason);
});

test("clearing a call's signal drops its timer and its listener on the caller's signal", async () => {
  const clock = new VirtualClock();
  const caller = new AbortController();
  const { signal, clear } = callSignal(clock, { signal: caller.signal }, 500);
  assert.equal(getEventListeners(caller.signal, "abort").length, 1);
  clear();
  assert.equal(getEventListeners(caller.signal, "abort").length, 0);
  assert.equal(clock.pendingTimers, 0);
  await clock.advance(1000);
  assert.equal(signal.aborted, false);
});

test("where the plane lets the handler cancel its call, the deadline aborts the call's own signal: no controller is made", async () => {
  const clock = new VirtualClock();
  const call = new AbortController();
  const { signal, clear } = callSignal(clock, { signal: call.signal, cancel: (reason) => call.abort(reason) }, 500);
  assert.equal(signal, call.signal, "the handler runs under the call's own signal");
  assert.equal(getEventListeners(call.signal, "abort").length, 0, "no listener on it");
  await clock.advance(500);
  assert.ok(isArmatureError(call.signal.reason) && call.signal.reason.code === "REQUEST_TIMEOUT", String(call.signal.reason));
  clear();
  assert.equal(clock.pendingTimers, 0);
});

test("with a cancellable call, clearing drops the timer before the deadline", async () => {
  const clock = new VirtualClock();
  const call = new AbortController();
  const { clear } = callSignal(clock, { signal: call.signal, cancel: (reason) => call.abort(reason) }, 500);
  clear();
  assert.equal(clock.pendingTimers, 0);
  await clock.advance(1000);
  assert.equal(call.signal.aborted, false);
});
