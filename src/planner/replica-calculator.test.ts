import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { calculateReplicas, decodeOperatingPoint, type IntervalLoad, parseProfile, type ReplicaTargets } from "./index.js";

// The fixture profile (src/planner/fixtures/tiny-profile.json):
//   prefill  input 1000: TTFT 100 ms, 10000 tokens/s · 2000: 250 ms, 8000 · 4000: 800 ms, 5000
//   decode   (concurrency, context) → ITL ms / tokens/s
//            (1, 1000) 10 / 100   (16, 1000) 20 / 800   (64, 1000) 40 / 1600
//            (1, 3000) 12.5 / 80  (16, 3000) 32 / 500   (64, 3000) 64 / 1000
const profile = parseProfile(readFileSync(new URL("./fixtures/tiny-profile.json", import.meta.url), "utf8"), "tiny-profile.json");

const targets: ReplicaTargets = { layout: "disaggregated", sloTtftMs: 500, sloItlMs: 30, minWorkers: 1, maxWorkers: 8 };

// 10 req/s, 2000 tokens in, 200 out, a quarter of the prompt cached.
const load: IntervalLoad = { requestsPerSecond: 10, meanInputTokens: 2000, meanOutputTokens: 200, kvHitRate: 0.25 };

function near(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual}, expected ${expected}`);
}

test("the decode operating point is where the ITL crosses the target between profiled concurrencies", () => {
  // At context 1000 the ITLs are 10, 20, 40 at concurrency 1, 16, 64. Target 30 lies between 16 and 64:
  //   c* = 16 + (30 − 20)/(40 − 20)·(64 − 16) = 40; tokens/s 800 + 0.5·(1600 − 800) = 1200.
  assert.deepEqual(decodeOperatingPoint(profile, 1000, 30), {
    concurrency: 40,
    itlMs: 30,
    interleavedPrefillMs: 0,
    tokensPerSecond: 1200,
    meetsTarget: true,
  });
  // Target 40 is met exactly at the top of the grid; target 100 is met everywhere: the top again.
  assert.deepEqual(decodeOperatingPoint(profile, 1000, 40), {
    concurrency: 64,
    itlMs: 40,
    interleavedPrefillMs: 0,
    tokensPerSecond: 1600,
    meetsTarget: true,
  });
  assert.equal(decodeOperatingPoint(profile, 1000, 100).concurrency, 64);
  // Target 5 is below the ITL of a lone sequence: the lowest concurrency, target not met.
  assert.deepEqual(decodeOperatingPoint(profile, 1000, 5), {
    concurrency: 1,
    itlMs: 10,
    interleavedPrefillMs: 0,
    tokensPerSecond: 100,
    meetsTarget: false,
  });
  // With each running sequence adding 0.25 ms of prefill to every step: 10.25, 24, 56 at 1, 16, 64;
  //   c* = 16 + (30 − 24)/(56 − 24)·48 = 25, where the decode ITL is 20 + (9/48)·20 = 23.75 and the
  //   prefills add 25 × 0.25 = 6.25; tokens/s 800 + (9/48)·800 = 950.
  assert.deepEqual(decodeOperatingPoint(profile, 1000, 30, 0.25), {
    concurrency: 25,
    itlMs: 30,
    interleavedPrefillMs: 6.25,
    tokensPerSecond: 950,
    meetsTarget: true,
  });
});

test("disaggregated: prefill and decode workers worked by hand", () => {
  const plan = calculateReplicas(load, profile, targets);
  assert.equal(plan.layout, "disaggregated");
  if (plan.layout !== "disaggregated") return;
  // Prefill: input′ = 2000 × (1 − 0.25) = 1500, halfway from 1000 to 2000:
  //   TTFT 100 + 0.5·150 = 175 ms ≤ 500; 10000 + 0.5·(8000 − 10000) = 9000 tokens/s per worker.
  //   demand 10 × 1500 = 15000 tokens/s; 15000 / 9000 = 1.667 → 2 workers.
  assert.equal(plan.prefill.inputTokens, 1500);
  assert.equal(plan.prefill.demandTokensPerSecond, 15000);
  assert.equal(plan.prefill.workerTokensPerSecond, 9000);
  assert.equal(plan.prefill.ttftMs, 175);
  assert.equal(plan.prefill.meetsTarget, true);
  assert.equal(plan.prefillWorkers, 2);
  // Decode: context = 2000 + 200/2 = 2100, v = (2100 − 1000)/2000 = 0.55.
  //   ITL at 16: 20 + 0.55·12 = 26.6; at 64: 40 + 0.55·24 = 53.2. Target 30 lies between:
  //   share = (30 − 26.6)/(53.2 − 26.6) = 3.4/26.6 = 17/133; c* = 16 + 48·17/133 = 2944/133 ≈ 22.14
  //   tokens/s at 16: 800 + 0.55·(500 − 800) = 635; at 64: 1600 + 0.55·(1000 − 1600) = 1270;
  //   at c*: 635 + (17/133)·635 = 635·150/133 = 95250/133 ≈ 716.17
  //   demand 10 × 200 = 2000 tokens/s; 2000 / (95250/133) = 266000/95250 ≈ 2.79 → 3 workers.
  assert.equal(plan.decode.contextTokens, 2100);
  near(plan.decode.concurrency, 2944 / 133, "concurrency");
  near(plan.decode.itlMs, 30, "ITL");
  near(plan.decode.workerTokensPerSecond, 95250 / 133, "tokens/s per worker");
  near(plan.decode.workers, 266000 / 95250, "decode workers");
  assert.equal(plan.decodeWorkers, 3);
  assert.equal(plan.bound, "none");
  assert.match(plan.reason, /prefill 15000 tokens\/s ÷ 9000 per worker = 1\.67 workers/);
});

test("aggregated: the decode point leaves room for the prefills sharing its steps, and one pool is sized by the sum, rounded once", () => {
  // Uncached input 1500: TTFT 100 + 0.5·(250 − 100) = 175 ms, 9000 tokens/s. Each running sequence adds
  // 175/200 = 0.875 ms to every step (c sequences of 200 tokens start c/200 requests per step).
  // Context 2100: decode ITL 11.375 at 1, 26.6 at 16; with the prefills 12.25 and 26.6 + 14 = 40.6.
  // Target 30 lies between: c* = 1 + 15·(30 − 12.25)/(40.6 − 12.25) = 1 + 15·355/567 = 1964/189 ≈ 10.39;
  // the decode ITL there is 30 − 0.875·c*, the prefills' share 0.875·1964/189 = 1718.5/189 ≈ 9.09 ms.
  // tokens/s at (1, 2100) 89, at (16, 2100) 635: at c* 89 + (355/567)·546 = 34899/81 ≈ 430.85.
  // Workers: 15000/9000 + 2000/(34899/81) = 1.667 + 4.642 = 6.309 → 7.
  const plan = calculateReplicas(load, profile, { ...targets, layout: "aggregated" });
  assert.equal(plan.layout, "aggregated");
  if (plan.layout !== "aggregated") return;
  near(plan.decode.concurrency, 1964 / 189, "concurrency");
  near(plan.decode.itlMs, 30, "ITL with the prefills");
  near(plan.decode.interleavedPrefillMs, 1718.5 / 189, "the prefills' share of the ITL");
  near(plan.decode.workerTokensPerSecond, 34899 / 81, "tokens/s per worker");
  assert.equal(plan.workers, 7);
  assert.match(plan.reason, /\(ITL 30 ms, 9\.09 of it interleaved prefills\)/);
  // 3 req/s: prefill 3 × 1500 / 9000 = 0.5; decode 3 × 200 / (34899/81) = 1.393; the sum 1.893 → 2 workers,
  // where rounding each pool first would take 1 + 2 = 3.
  const light = calculateReplicas({ ...load, requestsPerSecond: 3 }, profile, { ...targets, layout: "aggregated" });
  assert.equal(light.layout === "aggregated" && light.workers, 2);
  // A decode pool holds its decode ITL alone to the target: the same load's decode point is the disaggregated one.
  const split = calculateReplicas(load, profile, targets);
  near(split.decode.concurrency, 2944 / 133, "a decode pool's concurrency");
  assert.equal(split.decode.interleavedPrefillMs, 0);
});

test("a target no count of workers can meet is reported, and the pool is still sized for its throughput", () => {
  // TTFT target 150 < 175 ms for a 1500-token prefill; ITL target 8 < 10 ms for a lone sequence at any context.
  const plan = calculateReplicas(load, profile, { ...targets, sloTtftMs: 150, sloItlMs: 8, maxWorkers: 100 });
  assert.equal(plan.prefill.meetsTarget, false);
  assert.equal(plan.decode.meetsTarget, false);
  // Decode at concurrency 1, context 2100: 100 + 0.55·(80 − 100) = 89 tokens/s; 2000 / 89 = 22.47 → 23 workers.
  near(plan.decode.workerTokensPerSecond, 89, "tokens/s at concurrency 1");
  assert.equal(plan.layout === "disaggregated" && plan.decodeWorkers, 23);
  assert.match(plan.reason, /over the 150 ms TTFT target at any count/);
  assert.match(plan.reason, /over the 8 ms ITL target at any count/);
});

test("no load gives the minimum workers of each pool", () => {
  const idle = { requestsPerSecond: 0, meanInputTokens: 0, meanOutputTokens: 0, kvHitRate: 0 };
  const plan = calculateReplicas(idle, profile, { ...targets, minWorkers: 2 });
  assert.equal(plan.layout === "disaggregated" && `${plan.prefillWorkers} + ${plan.decodeWorkers}`, "2 + 2");
  assert.equal(plan.bound, "min-workers");
  const aggregated = calculateReplicas(idle, profile, { ...targets, layout: "aggregated", minWorkers: 2 });
  assert.equal(aggregated.layout === "aggregated" && aggregated.workers, 2);
});

test("over the worker budget the pools shrink in proportion", () => {
  // 35 req/s: prefill 35 × 1500 / 9000 = 5.83 → 6; decode 35 × 2000/10 / (95250/133) = 9.77 → 10.
  // 6 + 10 = 16 > 8: scale 8/16 = 0.5, prefill ⌊6 × 0.5⌋ = 3, decode 8 − 3 = 5.
  const plan = calculateReplicas({ ...load, requestsPerSecond: 35 }, profile, targets);
  assert.equal(plan.layout === "disaggregated" && `${plan.prefillWorkers} + ${plan.decodeWorkers}`, "3 + 5");
  assert.equal(plan.bound, "max-workers");
  assert.match(plan.reason, /6 \+ 10 is over --max-workers 8: shrunk in proportion to 3 \+ 5/);
  // A pool never shrinks below --min-workers: with 2 + 23 against a budget of 8 (the unreachable ITL target above),
  // ⌊2 × 8/25⌋ = 0 is raised to 1, and decode gets the other 7.
  const lopsided = calculateReplicas(load, profile, { ...targets, sloItlMs: 8 });
  assert.equal(lopsided.layout === "disaggregated" && `${lopsided.prefillWorkers} + ${lopsided.decodeWorkers}`, "1 + 7");
  const aggregated = calculateReplicas({ ...load, requestsPerSecond: 35 }, profile, { ...targets, layout: "aggregated" });
  assert.equal(aggregated.layout === "aggregated" && aggregated.workers, 8);
  assert.equal(aggregated.bound, "max-workers");
});

test("a count that is whole up to float noise takes no extra worker", () => {
  // 100 req/s × 1000 tokens × (1 − 0.7) = 30000 tokens/s at 10000 per worker (300 tokens, below the profile: its
  // first point) is exactly 3 workers; in floats 1 − 0.7 = 0.30000000000000004 and the quotient is 3.000000000000001.
  const plan = calculateReplicas(
    { requestsPerSecond: 100, meanInputTokens: 1000, meanOutputTokens: 10, kvHitRate: 0.7 },
    profile,
    { ...targets, maxWorkers: 100 },
  );
  assert.equal(plan.layout === "disaggregated" && plan.prefillWorkers, 3);
});

test("aggregated: a profile that measured interleaving is sized by it, not by the idle TTFT", () => {
  const document = JSON.parse(readFileSync(new URL("./fixtures/tiny-profile.json", import.meta.url), "utf8"));
  // Half of each TTFT (100, 250, 800 ms): at 1500 uncached tokens 50 + 0.5·(125 − 50) = 87.5 ms, so each
  // running sequence adds 87.5/200 = 0.4375 ms to every step. ITL at 1: 11.375 + 0.4375 = 11.8125; at 16:
  // 26.6 + 7 = 33.6; c* = 1 + 15·(30 − 11.8125)/(33.6 − 11.8125) = 1 + 15·18.1875/21.7875.
  document.prefill.forEach((point: Record<string, number>, k: number) => {
    point.interleavedMs = [50, 125, 400][k]!;
  });
  const measured = parseProfile(document, "measured.json");
  const plan = calculateReplicas(load, measured, { ...targets, layout: "aggregated" });
  near(plan.prefill.interleavedMs, 87.5, "interleaved prefill");
  near(plan.prefill.ttftMs, 175, "TTFT, unchanged");
  const concurrency = 1 + (15 * 18.1875) / 21.7875;
  near(plan.decode.concurrency, concurrency, "concurrency");
  near(plan.decode.interleavedPrefillMs, concurrency * 0.4375, "the prefills' share");
});
