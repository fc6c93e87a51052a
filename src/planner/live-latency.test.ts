import assert from "node:assert/strict";
import { test } from "node:test";
import { LiveLatency } from "./live-latency.js";

// Hand-worked: each case's figures follow from the request timelines written beside it.

test("a finished request counts on the worker it ran on, for the window, then not", () => {
  const live = new LiveLatency(10_000);
  const r = live.begin(0);
  r.routed("w1");
  r.tokens(300, 1); // TTFT 300 ms
  r.tokens(310, 1);
  r.tokens(330, 1); // gaps 10 and 20: ITL 15 ms
  r.end(330);
  assert.deepEqual(live.estimates(400, ["w1", "w2"]), [
    { ttftMs: 300, itlMs: 15 },
    { ttftMs: 0, itlMs: 0 },
  ]);
  assert.deepEqual(live.estimates(10_331, ["w1"]), [{ ttftMs: 0, itlMs: 0 }]);
  assert.equal(live.running, 0);
});

test("a request still waiting counts with its age: on its worker, or on every worker while unrouted", () => {
  const live = new LiveLatency(60_000);
  const done = live.begin(0);
  done.routed("w1");
  done.tokens(300, 1);
  done.end(300);
  const waiting = live.begin(1000);
  // Unrouted at 1,500 ms: 500 ms old on both. w1: (300 + 500) / 2; w2: 500.
  assert.deepEqual(
    live.estimates(1500, ["w1", "w2"]).map((e) => e.ttftMs),
    [400, 500],
  );
  waiting.routed("w2");
  assert.deepEqual(
    live.estimates(2000, ["w1", "w2"]).map((e) => e.ttftMs),
    [300, 1000],
  );
  waiting.tokens(2100, 1); // its first token: no longer waiting, one token is no gap yet
  assert.deepEqual(live.estimates(2200, ["w1", "w2"]), [
    { ttftMs: 300, itlMs: 0 },
    { ttftMs: 0, itlMs: 0 },
  ]);
});

test("a running stream counts with its mean gap, or with the gap it is waiting in when longer", () => {
  const live = new LiveLatency(60_000);
  const r = live.begin(0);
  r.routed("w1");
  r.tokens(100, 1);
  r.tokens(110, 1);
  r.tokens(120, 1); // mean gap 10 ms
  assert.equal(live.estimates(121, ["w1"])[0]?.itlMs, 10);
  // Stalled until 400 ms: (400 − 100) / 3 tokens = 100 ms.
  assert.equal(live.estimates(400, ["w1"])[0]?.itlMs, 100);
});

test("split requests: the prefill worker owns the TTFT, the decode worker the ITL", () => {
  const live = new LiveLatency(60_000);
  const r = live.begin(0);
  r.routed("decode-1", "prefill-1");
  r.tokens(200, 1);
  r.tokens(250, 1);
  r.end(250);
  assert.deepEqual(live.estimates(300, ["prefill-1", "decode-1"]), [
    { ttftMs: 200, itlMs: 0 },
    { ttftMs: 0, itlMs: 50 },
  ]);
});

test("a request that ended without a token leaves no sample; ending twice counts once; a worker forgotten starts afresh", () => {
  const live = new LiveLatency(60_000);
  const failed = live.begin(0);
  failed.routed("w1");
  failed.end(5000);
  failed.end(6000);
  assert.deepEqual(live.estimates(6000, ["w1"]), [{ ttftMs: 0, itlMs: 0 }]);
  const r = live.begin(6000);
  r.routed("w1");
  r.tokens(6100, 2);
  r.end(6100);
  r.end(6200);
  assert.deepEqual(live.estimates(6200, ["w1"]), [{ ttftMs: 100, itlMs: 0 }]);
  live.forget("w1");
  assert.deepEqual(live.estimates(6200, ["w1"]), [{ ttftMs: 0, itlMs: 0 }]);
});

test("a request that met a cold start counts for its ITL only, waiting or done; idleness runs from the last request's end", () => {
  const live = new LiveLatency(60_000);
  assert.equal(live.idleMs(5000, 1000), 4000, "none yet: idle since the given start");
  const cold = live.begin(0, true);
  // Waiting 30 s for a worker to start: not counted as load.
  assert.deepEqual(live.estimates(30_000, ["w1"]), [{ ttftMs: 0, itlMs: 0 }]);
  assert.equal(live.idleMs(30_000, 0), 0, "a request runs");
  cold.routed("w1");
  cold.tokens(30_100, 1);
  cold.tokens(30_120, 1); // one gap of 20 ms
  cold.end(30_120);
  assert.deepEqual(live.estimates(30_200, ["w1"]), [{ ttftMs: 0, itlMs: 20 }]);
  assert.equal(live.idleMs(31_120, 0), 1000);
  // A warm request after it counts whole.
  const warm = live.begin(31_000);
  warm.routed("w1");
  warm.tokens(31_050, 1);
  warm.end(31_050);
  assert.deepEqual(live.estimates(31_100, ["w1"]), [{ ttftMs: 50, itlMs: 20 }]);
});
