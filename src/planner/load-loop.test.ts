import assert from "node:assert/strict";
import { test } from "node:test";
import { LoadLoop, type LoadLoopSettings, type PoolObservation } from "./index.js";

// Targets TTFT 500 ms, ITL 50 ms; up above 1.0 × target, down below 0.8 × target (400 ms, 40 ms).
const settings: LoadLoopSettings = {
  sloTtftMs: 500,
  sloItlMs: 50,
  minWorkers: 1,
  scaleToZeroAfterSeconds: 600,
  maxWorkers: 8,
  cooldownSeconds: 30,
  scaleUpThreshold: 1.0,
  scaleDownThreshold: 0.8,
  advisory: false,
};

/** A pool of `workers` whose workers all estimate (`ttftMs`, `itlMs`). */
function pool(workers: number, ttftMs: number, itlMs: number, floorWorkers?: number): PoolObservation {
  return { workers, estimates: Array.from({ length: workers }, () => ({ ttftMs, itlMs })), floorWorkers };
}

function aggregated(loop: LoadLoop, nowMs: number, observation: PoolObservation) {
  const decision = loop.decide(nowMs, { layout: "aggregated", pool: observation });
  return decision.pools[0]!;
}

test("up by one when every worker is over a target, down by one when every estimate is under", () => {
  const loop = new LoadLoop(settings);
  const up = aggregated(loop, 0, pool(2, 600, 20));
  assert.deepEqual([up.targetWorkers, up.direction], [3, "up"]);
  assert.match(up.reason, /TTFT over 500 ms on all 2 workers \(lowest 600 ms\)/);
  // ITL alone is enough.
  assert.equal(aggregated(new LoadLoop(settings), 0, pool(2, 100, 51)).targetWorkers, 3);
  // 200 < 400 and 10 < 40 on all 4; one fewer: 200·4/3 = 266.7 ≤ 500 and 13.3 ≤ 50. Down to 3.
  const down = aggregated(new LoadLoop(settings), 0, pool(4, 200, 10));
  assert.deepEqual([down.targetWorkers, down.direction], [3, "down"]);
});

test("one worker under the target is enough to hold; one over the down threshold is enough to hold", () => {
  const loop = new LoadLoop(settings);
  const mixed = {
    workers: 2,
    estimates: [
      { ttftMs: 600, itlMs: 20 },
      { ttftMs: 450, itlMs: 20 },
    ],
  };
  assert.equal(aggregated(loop, 0, mixed).direction, "hold");
  const busyOne = {
    workers: 3,
    estimates: [
      { ttftMs: 100, itlMs: 10 },
      { ttftMs: 100, itlMs: 10 },
      { ttftMs: 100, itlMs: 45 },
    ],
  };
  assert.equal(aggregated(loop, 0, busyOne).direction, "hold");
  assert.equal(aggregated(loop, 0, { workers: 3, estimates: [] }).reason, "no load reports");
});

test("a constant load exactly at a threshold causes no change over 100 steps", () => {
  // The load is fixed; spread over n workers, each estimates in proportion to 1/n. Cool-down off, so only
  // the thresholds stand between the loop and flapping.
  for (const [name, ttftAtFour] of [
    ["up threshold", 500],
    ["down threshold", 400],
  ] as const) {
    const loop = new LoadLoop({ ...settings, cooldownSeconds: 0 });
    let workers = 4;
    let changes = 0;
    for (let step = 0; step < 100; step++) {
      const decision = aggregated(loop, step * 5000, pool(workers, (ttftAtFour * 4) / workers, 10));
      if (decision.targetWorkers !== workers) changes++;
      workers = decision.targetWorkers;
    }
    assert.equal(changes, 0, name);
    assert.equal(workers, 4, name);
  }
});

test("a step wider than the threshold band is taken once, not undone", () => {
  // A load of 600 ms on 1 worker: up to 2, where each estimates 300 ms < 400. Without the one-fewer check the loop
  // would drop back to 1 (600 ms) and climb again every step; with it, 300·2/1 = 600 > 500 refuses the drop.
  const loop = new LoadLoop({ ...settings, cooldownSeconds: 0 });
  let workers = 1;
  let changes = 0;
  let last = "";
  for (let step = 0; step < 100; step++) {
    const decision = aggregated(loop, step * 5000, pool(workers, 600 / workers, 10));
    if (decision.targetWorkers !== workers) changes++;
    workers = decision.targetWorkers;
    last = decision.reason;
  }
  assert.equal(changes, 1);
  assert.equal(workers, 2);
  assert.match(last, /one worker fewer would put TTFT near 600 ms, over 500 ms/);
});

test("no change within the cool-down of the last change", () => {
  const loop = new LoadLoop(settings); // 30 s
  assert.equal(aggregated(loop, 0, pool(2, 600, 20)).targetWorkers, 3);
  const cooling = aggregated(loop, 10_000, pool(3, 600, 20));
  assert.deepEqual([cooling.targetWorkers, cooling.direction], [3, "hold"]);
  assert.match(cooling.reason, /cooling down: changed 10 s ago, --planner-cooldown 30 s/);
  assert.equal(aggregated(loop, 29_999, pool(3, 600, 20)).targetWorkers, 3);
  assert.equal(aggregated(loop, 30_000, pool(3, 600, 20)).targetWorkers, 4);
  // A hold starts no cool-down: the clock runs from the last change.
  const other = new LoadLoop(settings);
  aggregated(other, 0, pool(3, 450, 20));
  assert.equal(aggregated(other, 1000, pool(3, 600, 20)).targetWorkers, 4);
});

test("never below the throughput floor, and a pool under it is raised to it at once", () => {
  const loop = new LoadLoop({ ...settings, cooldownSeconds: 0 });
  let workers = 6;
  for (let step = 0; step < 10; step++) {
    const decision = aggregated(loop, step * 5000, pool(workers, 100, 5, 4));
    workers = decision.targetWorkers;
  }
  assert.equal(workers, 4);
  const held = aggregated(loop, 60_000, pool(4, 100, 5, 4));
  assert.equal(held.direction, "hold");
  assert.match(held.reason, /held at the throughput floor 4/);
  // Raised from 2 to 5 in one tick, within the cool-down of the change just made.
  const cooling = new LoadLoop(settings);
  assert.equal(aggregated(cooling, 0, pool(2, 600, 20)).targetWorkers, 3);
  const raised = aggregated(cooling, 1000, pool(3, 100, 5, 5));
  assert.deepEqual([raised.targetWorkers, raised.reason], [5, "raised to the throughput floor 5"]);
});

test("held at --min-workers and at --max-workers", () => {
  const loop = new LoadLoop(settings);
  const low = aggregated(loop, 0, pool(1, 10, 1));
  assert.deepEqual([low.targetWorkers, low.direction], [1, "hold"]);
  assert.match(low.reason, /held at --min-workers 1/);
  const high = aggregated(loop, 0, pool(8, 900, 90));
  assert.deepEqual([high.targetWorkers, high.direction], [8, "hold"]);
  assert.match(high.reason, /held by --max-workers 8/);
});

test("disaggregated: prefill judged by TTFT, decode by ITL, and the last free worker goes to the pool further over", () => {
  const loop = new LoadLoop(settings);
  // 3 + 4 = 7 of 8. Prefill TTFT 600/500 = 1.2 over; decode ITL 75/50 = 1.5 over: decode gets the one worker left.
  const decision = loop.decide(0, { layout: "disaggregated", prefill: pool(3, 600, 75), decode: pool(4, 600, 75) });
  const [prefill, decode] = decision.pools;
  assert.deepEqual([prefill!.pool, prefill!.targetWorkers], ["prefill", 3]);
  assert.match(prefill!.reason, /held by --max-workers 8/);
  assert.deepEqual([decode!.pool, decode!.targetWorkers], ["decode", 5]);
  // A prefill pool with a slow ITL but a fast TTFT is not grown.
  const fresh = new LoadLoop(settings);
  const split = fresh.decide(0, { layout: "disaggregated", prefill: pool(2, 450, 900), decode: pool(2, 900, 45) });
  assert.deepEqual(
    split.pools.map((p) => p.direction),
    ["hold", "hold"],
  );
});

test("advisory decisions report a change but start no cool-down", () => {
  const loop = new LoadLoop({ ...settings, advisory: true });
  const first = loop.decide(0, { layout: "aggregated", pool: pool(2, 600, 20) });
  assert.deepEqual([first.advisory, first.changes, first.pools[0]!.targetWorkers], [true, true, 3]);
  // Nothing was applied: the pool still has 2 workers, and the same advice comes a second later.
  const second = loop.decide(1000, { layout: "aggregated", pool: pool(2, 600, 20) });
  assert.equal(second.pools[0]!.targetWorkers, 3);
  assert.doesNotMatch(second.pools[0]!.reason, /cooling down/);
});

test("--min-workers 0: one worker is kept until the pool has been idle for --scale-to-zero-after, then none; a request brings one back at once", () => {
  const zero = { ...settings, minWorkers: 0, scaleToZeroAfterSeconds: 60 };
  const idle = (workers: number, idleMs: number | undefined): PoolObservation => ({ ...pool(workers, 0, 0), idleMs });
  // Idle 59 s of 60: held at one.
  const held = aggregated(new LoadLoop(zero), 0, idle(1, 59_000));
  assert.deepEqual([held.targetWorkers, held.direction], [1, "hold"]);
  assert.match(held.reason, /held at 1 until idle for --scale-to-zero-after 60 s/);
  // Unknown idleness never reaches zero.
  assert.equal(aggregated(new LoadLoop(zero), 0, idle(1, undefined)).targetWorkers, 1);
  // Idle 60 s: down to none, saying why.
  const loop = new LoadLoop(zero);
  const down = aggregated(loop, 0, idle(1, 60_000));
  assert.deepEqual([down.targetWorkers, down.direction], [0, "down"]);
  assert.match(down.reason, /idle for 60 s \(--scale-to-zero-after 60 s\)/);
  // Two workers idle that long go down one at a time, as any scale-down.
  assert.equal(aggregated(new LoadLoop(zero), 0, idle(2, 600_000)).targetWorkers, 1);
  // A pool of none stays so while idle; a request (idle 0) raises it to one within the cool-down.
  assert.equal(aggregated(loop, 1000, { workers: 0, estimates: [], idleMs: 61_000 }).targetWorkers, 0);
  const woken = aggregated(loop, 2000, { workers: 0, estimates: [], idleMs: 0 });
  assert.deepEqual([woken.targetWorkers, woken.direction], [1, "up"]);
  assert.match(woken.reason, /raised to 1: a request runs or waits/);
  // With --min-workers 1 idleness changes nothing.
  assert.equal(aggregated(new LoadLoop(settings), 0, idle(1, 3_600_000)).targetWorkers, 1);
});
