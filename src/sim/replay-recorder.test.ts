import assert from "node:assert/strict";
import { test } from "node:test";
import { ReplayRecorder } from "./replay-recorder.js";

test("each priority class reports its own SLO attainment over the requests that arrived, shed ones counting as misses", () => {
  // SLO: TTFT ≤ 100 ms, ITL ≤ 20 ms. Hand-worked:
  //   class 0: 4 arrived; 50 ms/10 ms ok, 150 ms late, 80 ms/30 ms ITL too slow, 1 shed → 1/4.
  //   class 10: 2 arrived; 20 ms with one token (no ITL) ok, 100 ms/20 ms ok (at the limit) → 2/2.
  const recorder = new ReplayRecorder({ ttftMs: 100, itlMs: 20 });
  const done = (priority: number, ttftMs: number, itlMs: number | undefined) => {
    recorder.arrive(priority);
    recorder.complete({ priority, ttftMs, itlMs, promptTokens: 10, cachedTokens: 0, outputTokens: 2 });
  };
  done(0, 50, 10);
  done(0, 150, 10);
  done(0, 80, 30);
  recorder.arrive(0);
  recorder.reject(0);
  done(10, 20, undefined);
  done(10, 100, 20);
  const [urgent, deferred] = recorder.classes;
  assert.deepEqual(
    [urgent?.priority, urgent?.requests, urgent?.completed, urgent?.rejected, urgent?.slo_attainment],
    [0, 4, 3, 1, 0.25],
  );
  assert.deepEqual(
    [deferred?.priority, deferred?.requests, deferred?.completed, deferred?.rejected, deferred?.slo_attainment],
    [10, 2, 2, 0, 1],
  );
  assert.equal(recorder.classes.length, 2);
});
