import assert from "node:assert/strict";
import { test } from "node:test";
import { ArmatureError } from "../protocol/index.js";
import { createPredictor, LoadForecaster, type LoadPredictor, loadReading, PREDICTOR_NAMES } from "./index.js";

function feed(predictor: LoadPredictor, values: readonly number[]): LoadPredictor {
  for (const value of values) predictor.observe(value);
  return predictor;
}

test("every predictor predicts 0 before its first reading", () => {
  const options = { holtWinters: { seasonLength: 4 } };
  for (const name of PREDICTOR_NAMES) assert.equal(createPredictor(name, options).predict(), 0, name);
});

test("a reading that is not a finite, non-negative number counts as 0", () => {
  assert.equal(loadReading(Number.NaN), 0);
  assert.equal(loadReading(Number.POSITIVE_INFINITY), 0);
  assert.equal(loadReading(-5), 0);
  assert.equal(loadReading(7.5), 7.5);
  assert.equal(feed(createPredictor("constant"), [12, Number.NaN]).predict(), 0);
});

test("constant predicts the last reading", () => {
  const predictor = feed(createPredictor("constant"), [5, 9, 4]);
  assert.equal(predictor.predict(), 4);
  assert.equal(predictor.observations, 3);
});

test("moving-average predicts the mean of the last N readings", () => {
  const predictor = createPredictor("moving-average", { movingAverageWindow: 3 });
  predictor.observe(3);
  assert.equal(predictor.predict(), 3); // (3) / 1
  predictor.observe(6);
  assert.equal(predictor.predict(), 4.5); // (3 + 6) / 2
  predictor.observe(9);
  assert.equal(predictor.predict(), 6); // (3 + 6 + 9) / 3
  predictor.observe(12);
  assert.equal(predictor.predict(), 9); // (6 + 9 + 12) / 3: the 3 left the window
});

test("kalman: one and two filter steps worked by hand", () => {
  // qLevel 1, qTrend 0.1, r 10, P₀ = 1000·I (the defaults).
  const predictor = createPredictor("kalman");
  // Reading 1, z = 10: x = [10, 0], forecast ℓ + b = 10.
  predictor.observe(10);
  assert.equal(predictor.predict(), 10);
  // Reading 2, z = 14:
  //   x⁻ = [10 + 0, 0]; P⁻ = [[1000 + 2·0 + 1000 + 1, 0 + 1000], [1000, 1000 + 0.1]] = [[2001, 1000], [1000, 1000.1]]
  //   y = 14 − 10 = 4; S = 2001 + 10 = 2011; K = [2001/2011, 1000/2011]
  //   ℓ = 10 + 4·2001/2011, b = 4·1000/2011, forecast = 10 + 4·3001/2011 = 10 + 12004/2011 ≈ 15.969170
  predictor.observe(14);
  assert.ok(Math.abs(predictor.predict() - (10 + 12004 / 2011)) < 1e-9, `got ${predictor.predict()}`);
  // Reading 3, z = 18:
  //   P = (I − KH)P⁻: P₀₀ = (10/2011)·2001 ≈ 9.950273, P₀₁ = (10/2011)·1000 ≈ 4.972650,
  //       P₁₁ = 1000.1 − (1000/2011)·1000 ≈ 502.834958
  //   x⁻ = [13.980109 + 1.989060, 1.989060] = [15.969170, 1.989060]
  //   P⁻₀₀ = 9.950273 + 2·4.972650 + 502.834958 + 1 ≈ 523.730231; P⁻₀₁ = 4.972650 + 502.834958 ≈ 507.807608
  //   y = 18 − 15.969170 = 2.030830; S = 533.730231; K = [0.981264, 0.951431]
  //   ℓ = 15.969170 + 0.981264·2.030830 ≈ 17.961950; b = 1.989060 + 0.951431·2.030830 ≈ 3.921255
  //   forecast ≈ 21.883205 (the readings climb by 4, so 22 is the line's next value)
  predictor.observe(18);
  assert.ok(Math.abs(predictor.predict() - 21.883205) < 1e-5, `got ${predictor.predict()}`);
});

test("holt-winters before a full season is Holt's linear method", () => {
  const predictor = createPredictor("holt-winters", { holtWinters: { seasonLength: 100, alpha: 0.5, beta: 0.5 } });
  predictor.observe(10);
  assert.equal(predictor.predict(), 10); // ℓ = 10, b = 0
  predictor.observe(16);
  assert.equal(predictor.predict(), 22); // ℓ = 16, b = 16 − 10 = 6
  predictor.observe(19);
  // ℓ = 0.5·19 + 0.5·(16 + 6) = 20.5; b = 0.5·(20.5 − 16) + 0.5·6 = 5.25; forecast 25.75
  assert.equal(predictor.predict(), 25.75);
});

test("holt-winters: three seasonal steps worked by hand (m = 3, α = β = γ = 0.5)", () => {
  const predictor = createPredictor("holt-winters", { holtWinters: { seasonLength: 3, alpha: 0.5, beta: 0.5, gamma: 0.5 } });
  feed(predictor, [10, 16]);
  assert.equal(predictor.predict(), 22); // still Holt: ℓ = 16, b = 6
  // y₃ = 13 completes the first season: ℓ = (10 + 16 + 13) / 3 = 13, b = 0, s = [10 − 13, 16 − 13, 13 − 13] = [−3, 3, 0]
  // forecast for t = 4 (phase 0): 13 + 0 + (−3) = 10
  predictor.observe(13);
  assert.equal(predictor.predict(), 10);
  // y₄ = 12 (phase 0, s = −3): ℓ = 0.5·(12 + 3) + 0.5·(13 + 0) = 14; b = 0.5·(14 − 13) + 0.5·0 = 0.5
  //   s₀ = 0.5·(12 − 13 − 0) + 0.5·(−3) = −2; forecast for t = 5 (phase 1, s = 3): 14 + 0.5 + 3 = 17.5
  predictor.observe(12);
  assert.equal(predictor.predict(), 17.5);
  // y₅ = 19 (phase 1, s = 3): ℓ = 0.5·(19 − 3) + 0.5·(14 + 0.5) = 15.25; b = 0.5·(15.25 − 14) + 0.5·0.5 = 0.875
  //   s₁ = 0.5·(19 − 14 − 0.5) + 0.5·3 = 3.75; forecast for t = 6 (phase 2, s = 0): 15.25 + 0.875 + 0 = 16.125
  predictor.observe(19);
  assert.equal(predictor.predict(), 16.125);
});

test("a linear ramp is extrapolated by kalman and by holt, where constant lags a step behind", () => {
  // y = 100 + 10·t for t = 1 … 30; the next value is 410.
  const ramp = Array.from({ length: 30 }, (_, i) => 100 + 10 * (i + 1));
  const kalman = feed(createPredictor("kalman"), ramp);
  const holt = feed(createPredictor("holt-winters", { holtWinters: { seasonLength: 1000 } }), ramp);
  const constant = feed(createPredictor("constant"), ramp);
  assert.ok(Math.abs(kalman.predict() - 410) < 0.5, `kalman ${kalman.predict()}`);
  assert.ok(Math.abs(holt.predict() - 410) < 1e-9, `holt ${holt.predict()}`); // exact on a line
  assert.equal(constant.predict(), 400);
});

test("a falling ramp is never forecast below 0", () => {
  const falling = [40, 30, 20, 10, 0];
  assert.equal(feed(createPredictor("kalman"), falling).predict() >= 0, true);
  assert.equal(feed(createPredictor("holt-winters", { holtWinters: { seasonLength: 100 } }), falling).predict(), 0);
});

test("a periodic series is followed by holt-winters far better than by a moving average", () => {
  // A daily-like cycle of 12 intervals, 100 ± 50, with a fixed ±3 wobble; 10 cycles, scored on the last 3.
  const wobble = [3, -2, 1, -3, 2, 0, -1, 3, -2, 2, -3, 1, 0];
  const series = Array.from({ length: 120 }, (_, i) => 100 + 50 * Math.sin((2 * Math.PI * (i + 1)) / 12) + wobble[i % 13]!);
  const holtWinters = createPredictor("holt-winters", { holtWinters: { seasonLength: 12 } });
  const movingAverage = createPredictor("moving-average");
  let holtWintersError = 0;
  let movingAverageError = 0;
  series.forEach((y, i) => {
    if (i >= 84) {
      holtWintersError += Math.abs(holtWinters.predict() - y);
      movingAverageError += Math.abs(movingAverage.predict() - y);
    }
    holtWinters.observe(y);
    movingAverage.observe(y);
  });
  // The moving average trails the swing of ±50 by two intervals; Holt-Winters has the shape.
  assert.ok(holtWintersError * 4 < movingAverageError, `holt-winters ${holtWintersError}, moving average ${movingAverageError}`);
});

test("predict does not advance a predictor", () => {
  const predictor = feed(createPredictor("kalman"), [10, 14]);
  const first = predictor.predict();
  assert.equal(predictor.predict(), first);
  assert.equal(predictor.observations, 2);
});

test("an unknown predictor name is refused with the list of names", () => {
  assert.throws(
    () => createPredictor("arima"),
    (error: unknown) =>
      error instanceof ArmatureError &&
      error.code === "CONFIG_INVALID" &&
      error.message.includes('"arima"') &&
      error.message.includes("constant, moving-average, kalman, holt-winters"),
  );
});

test("bad predictor options are refused by name", () => {
  const refused = (options: Parameters<typeof createPredictor>[1], name: string, text: string) =>
    assert.throws(
      () => createPredictor(name, options),
      (error: unknown) => error instanceof ArmatureError && error.code === "CONFIG_INVALID" && error.message.includes(text),
    );
  refused({ movingAverageWindow: 0 }, "moving-average", "predictorOptions.movingAverageWindow");
  refused({ kalman: { r: 0 } }, "kalman", "predictorOptions.kalman.r");
  refused({ holtWinters: { seasonLength: 12, alpha: 1.5 } }, "holt-winters", "predictorOptions.holtWinters.alpha");
  refused({ holtWinters: { seasonLength: 1 } }, "holt-winters", "predictorOptions.holtWinters.seasonLength");
  refused({}, "holt-winters", "season length");
});

test("the load forecaster predicts each quantity and keeps the hit rate a fraction", () => {
  const forecaster = new LoadForecaster("constant");
  assert.deepEqual(forecaster.forecast(), { requestsPerSecond: 0, meanInputTokens: 0, meanOutputTokens: 0, kvHitRate: 0 });
  forecaster.observe({ requestsPerSecond: 4, meanInputTokens: 1500, meanOutputTokens: 300, kvHitRate: 1.25 });
  assert.deepEqual(forecaster.forecast(), { requestsPerSecond: 4, meanInputTokens: 1500, meanOutputTokens: 300, kvHitRate: 1 });
  forecaster.observe({ requestsPerSecond: 0, meanInputTokens: Number.NaN, meanOutputTokens: Number.NaN, kvHitRate: 0.5 });
  assert.deepEqual(forecaster.forecast(), { requestsPerSecond: 0, meanInputTokens: 0, meanOutputTokens: 0, kvHitRate: 0.5 });
  assert.equal(forecaster.observations, 2);
});

test("a recurring burst is forecast an interval ahead of it; without recurrence the predictor alone speaks", () => {
  const quiet = { meanInputTokens: 1000, meanOutputTokens: 200, kvHitRate: 0 };
  const recurring = new LoadForecaster("kalman", {}, { kind: "auto" });
  const plain = new LoadForecaster("kalman", {}, { kind: "off" });
  // 1 request/s with bursts of 8 at readings 10 and 20 (indices from 0), then quiet up to reading 28.
  for (let i = 0; i <= 28; i++) {
    const load = { ...quiet, requestsPerSecond: i > 0 && i % 10 === 0 ? 8 : 1 };
    recurring.observe(load);
    plain.observe(load);
    if (i === 27) {
      // Readings 28 and 29 ahead repeat quiet readings: no peak to provision yet.
      assert.ok(recurring.forecast().requestsPerSecond < 2, `${recurring.forecast().requestsPerSecond}`);
    }
  }
  // Reading 30, two ahead, repeats the bursts at 20 and 10: the forecast holds the burst's rate.
  assert.equal(recurring.recurringPeriod?.readings, 10);
  assert.equal(recurring.forecast().requestsPerSecond, 8);
  assert.equal(recurring.forecast().meanInputTokens, plain.forecast().meanInputTokens);
  assert.ok(plain.forecast().requestsPerSecond < 2, `${plain.forecast().requestsPerSecond}`);
  assert.equal(plain.recurringPeriod, undefined);
});
