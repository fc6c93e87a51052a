import assert from "node:assert/strict";
import { test } from "node:test";
import { findPeriod, laggedCorrelation, RecurringLoad } from "./recurring-load.js";

/** 1 request/s with a burst of 8 at every index that is a positive multiple of 10, `length` readings. */
function bursts(length: number): number[] {
  return Array.from({ length }, (_, i) => (i > 0 && i % 10 === 0 ? 8 : 1));
}

const close = (actual: number | undefined, expected: number, tolerance = 1e-4) =>
  assert.ok(actual !== undefined && Math.abs(actual - expected) <= tolerance, `${actual} is not ${expected}`);

test("the lagged correlation, worked by hand", () => {
  // lag 3 of 1,2,3,1,2,3: the pairs (1,1), (2,2), (3,3) agree exactly.
  close(laggedCorrelation([1, 2, 3, 1, 2, 3], 3)?.correlation, 1);
  // lag 1: earlier 1,2,3,1,2 (mean 1.8), later 2,3,1,2,3 (mean 2.2); deviations −.8,.2,1.2,−.8,.2 and
  // −.2,.8,−1.2,−.2,.8; covariance sum −0.8, each variance sum 2.8: r = −0.8 / 2.8.
  const lag1 = laggedCorrelation([1, 2, 3, 1, 2, 3], 1);
  close(lag1?.correlation, -0.8 / 2.8);
  close(lag1?.varianceRatio, 1);
  // A flat side has no shape to correlate.
  assert.equal(laggedCorrelation([5, 5, 5, 5, 5, 5], 2), undefined);
  assert.equal(laggedCorrelation([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], 3), undefined);
});

test("bursts every 10 readings are found once the second has been seen, not before", () => {
  // Readings 0…19 hold one burst (index 10): nothing has repeated yet.
  assert.equal(findPeriod(bursts(20)), undefined);
  // With index 20 the burst has repeated. Lag 10: earlier = readings 0…10 (ten 1s, one 8), later =
  // readings 10…20 (8, nine 1s, 8). Σab = 8 + 9 + 64 = 81, ā = 18/11, b̄ = 25/11:
  // covariance 81 − 450/11 = 40.0909; variances 74 − 324/11 = 44.5455 and 137 − 625/11 = 80.1818;
  // r = 40.0909 / √(44.5455 · 80.1818) = 0.6708. Every other lag pairs the bursts with quiet readings.
  const period = findPeriod(bursts(21));
  assert.equal(period?.readings, 10);
  close(period?.correlation, 0.6708);
  assert.equal(findPeriod(bursts(45))?.readings, 10);
});

test("a load that only persists has no period; a cycle does", () => {
  // A ramp correlates with itself at every lag and never decorrelates: no repetition in it.
  assert.equal(findPeriod(Array.from({ length: 40 }, (_, i) => 1 + i)), undefined);
  // A plateau that steps up once neither.
  assert.equal(findPeriod(Array.from({ length: 40 }, (_, i) => (i < 20 ? 1 : 5))), undefined);
  // A sine of period 8, three periods: found at 8.
  const sine = Array.from({ length: 24 }, (_, i) => 3 + 2 * Math.sin((2 * Math.PI * i) / 8));
  assert.equal(findPeriod(sine)?.readings, 8);
});

test("a single burst among uneven quiet readings is not a period", () => {
  // The first 16 minutes of the bursts trace of docs/benchmarks.md (requests per minute, one burst
  // at minute 10). Lag 7 pairs the burst with minute 3, the busiest quiet minute: r = 0.82, but the
  // earlier side is quiet throughout (its variance a small fraction of the later side's), so the
  // burst has not repeated and no period is taken.
  const perMinute = [55, 57, 56, 79, 65, 57, 66, 62, 52, 70, 506, 62, 53, 52, 59, 54];
  const history = perMinute.map((count) => count / 60);
  const lag7 = laggedCorrelation(history, 7);
  assert.ok(lag7 !== undefined && lag7.correlation > 0.8 && lag7.varianceRatio < 0.01, JSON.stringify(lag7));
  assert.equal(findPeriod(history), undefined);
});

test("what the period repeats ahead: the highest reading at that phase in the last three periods", () => {
  const recurring = new RecurringLoad({ kind: "auto" });
  for (const reading of bursts(21)) recurring.observe(reading);
  assert.equal(recurring.period?.readings, 10);
  // The next reading (index 21) repeats index 11 and 1; index 30 repeats 20, 10 and 0.
  assert.equal(recurring.ahead(1), 1);
  assert.equal(recurring.ahead(9), 1);
  assert.equal(recurring.ahead(10), 8);
  // A phase whose oldest repetition was still quiet (index 0) takes the burst of the later ones.
  recurring.observe(1);
  assert.equal(recurring.ahead(9), 8);
});

test("a given period needs no detection; off finds nothing", () => {
  const fixed = new RecurringLoad({ kind: "fixed", readings: 3 });
  fixed.observe(2);
  fixed.observe(4);
  assert.equal(fixed.period, undefined);
  assert.equal(fixed.ahead(1), undefined);
  fixed.observe(9);
  assert.deepEqual(fixed.period, { readings: 3, correlation: 1 });
  // Index 3 repeats index 0; index 5 repeats index 2.
  assert.equal(fixed.ahead(1), 2);
  assert.equal(fixed.ahead(3), 9);

  const off = new RecurringLoad({ kind: "off" });
  for (const reading of bursts(45)) off.observe(reading);
  assert.equal(off.period, undefined);
  assert.equal(off.ahead(1), undefined);
});

test("readings that are not load count as none", () => {
  const recurring = new RecurringLoad({ kind: "fixed", readings: 2 });
  recurring.observe(Number.NaN);
  recurring.observe(-3);
  assert.equal(recurring.ahead(1), 0);
  assert.equal(recurring.ahead(2), 0);
});
