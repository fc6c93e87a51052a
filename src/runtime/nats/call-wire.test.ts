import assert from "node:assert/strict";
import { test } from "node:test";
import { createInbox } from "@nats-io/transport-node";
import { parseCallStart } from "./call-wire.js";

const stream = createInbox();
const cancel = `${stream}.cancel`;

test("a call start with inbox subjects and a positive window is taken as sent", () => {
  assert.deepEqual(parseCallStart({ payload: { a: 1 }, stream, cancel, window: 64 }), {
    payload: { a: 1 },
    stream,
    cancel,
    window: 64,
  });
  assert.deepEqual(parseCallStart({ payload: null, stream, cancel }), { payload: null, stream, cancel });
});

// Regression: a start whose stream subject was "a b" made the handler's heartbeat timer throw
// (an uncaught exception every second), and window 0 parked the handler before its first item.
test("a call start no handler could answer is refused", () => {
  for (const odd of ["", "a b", ">", "armature.>", "a.*.b", "a..b", ".a", "x".repeat(2000), 5, null, undefined]) {
    assert.equal(parseCallStart({ payload: 1, stream: odd, cancel }), undefined, `stream ${String(odd).slice(0, 20)}`);
    assert.equal(parseCallStart({ payload: 1, stream, cancel: odd }), undefined, `cancel ${String(odd).slice(0, 20)}`);
  }
  for (const window of [0, -1, 1.5, Number.NaN, "4", 2 ** 40, null]) {
    assert.equal(parseCallStart({ payload: 1, stream, cancel, window }), undefined, `window ${String(window)}`);
  }
  for (const value of [null, [], "start", 7]) assert.equal(parseCallStart(value), undefined);
});
