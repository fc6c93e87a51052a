import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { loadTrace, type TraceRequest } from "../sim/index.js";
import { type LoadShape, parseSteps, rateAt, validateLoadShape } from "./load-shape.js";
import { writeSyntheticTrace } from "./synthetic-trace.js";

// The number of arrivals in a window is Poisson with mean Λ = ∫λ(t)dt over the window, so its standard
// deviation is √Λ. Each count must lie within 4√Λ of Λ: a correct generator misses that with probability
// about 6·10⁻⁵ per window (normal approximation), while a 10% error in the rate, a wrong phase or a
// misplaced step moves the counts below by several times that.
function assertPoissonCount(count: number, expected: number, what: string): void {
  const tolerance = 4 * Math.sqrt(expected);
  assert.ok(
    Math.abs(count - expected) <= tolerance,
    `${what}: ${count} arrivals, expected ${expected.toFixed(1)} ± ${tolerance.toFixed(1)}`,
  );
}

/** Arrivals with timestamp in [fromSeconds, toSeconds). */
function countBetween(trace: readonly TraceRequest[], fromSeconds: number, toSeconds: number): number {
  return trace.filter((r) => r.timestamp >= fromSeconds * 1000 && r.timestamp < toSeconds * 1000).length;
}

describe("rateAt", () => {
  it("follows Dynamo's sin_synth formula: the minimum at 0, the middle at a quarter period, the maximum at half", () => {
    const sine: LoadShape = { kind: "sine", minRps: 2, maxRps: 10, periodSeconds: 200 };
    assert.equal(rateAt(sine, 0), 2);
    assert.ok(Math.abs(rateAt(sine, 50) - 6) < 1e-12);
    assert.equal(rateAt(sine, 100), 10);
    assert.ok(Math.abs(rateAt(sine, 200) - 2) < 1e-12);
  });

  it("holds each step's rate from its time to the next step", () => {
    const step: LoadShape = { kind: "step", steps: parseSteps("0:2,600:10,1200:2") };
    assert.deepEqual(
      [rateAt(step, 0), rateAt(step, 599.999), rateAt(step, 600), rateAt(step, 1199), rateAt(step, 5000)],
      [2, 2, 10, 10, 2],
    );
  });

  it("bursts during [k·every, k·every + length) from the second period on", () => {
    const burst: LoadShape = { kind: "burst", baseRps: 1, burstRps: 20, burstLengthSeconds: 10, burstEverySeconds: 60 };
    assert.deepEqual(
      [0, 5, 59.9, 60, 69.9, 70, 120, 130].map((t) => rateAt(burst, t)),
      [1, 1, 1, 20, 20, 1, 20, 1],
    );
  });
});

describe("parseSteps and validateLoadShape", () => {
  it("reads SECONDS:RATE pairs", () => {
    assert.deepEqual(parseSteps("0:2, 600:10.5"), [
      { atSeconds: 0, rps: 2 },
      { atSeconds: 600, rps: 10.5 },
    ]);
  });

  it("refuses bad values, naming the flag", () => {
    const cases: [LoadShape | (() => unknown), string][] = [
      [() => parseSteps("0:2,600"), "--steps"],
      [{ kind: "step", steps: parseSteps("10:2") }, "--steps"],
      [{ kind: "step", steps: parseSteps("0:2,600:3,600:4") }, "--steps"],
      [{ kind: "step", steps: parseSteps("0:0") }, "--steps"],
      [{ kind: "sine", minRps: 5, maxRps: 2, periodSeconds: 10 }, "--min-rate"],
      [{ kind: "sine", minRps: 0, maxRps: 2, periodSeconds: 0 }, "--period"],
      [{ kind: "burst", baseRps: 1, burstRps: 5, burstLengthSeconds: 60, burstEverySeconds: 60 }, "--burst-length"],
      [{ kind: "burst", baseRps: -1, burstRps: 5, burstLengthSeconds: 6, burstEverySeconds: 60 }, "--base-rate"],
    ];
    for (const [input, flag] of cases) {
      const run = typeof input === "function" ? input : () => validateLoadShape(input);
      assert.throws(run, (e: { code?: string; param?: string; message: string }) => {
        assert.equal(e.code, "CONFIG_INVALID");
        assert.equal(e.param, flag);
        assert.ok(e.message.startsWith(flag), e.message);
        return true;
      });
    }
  });
});

describe("arrival rates of generated traces, read back with loadTrace", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "armature-load-shape-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const generate = async (shape: LoadShape, durationSeconds: number, seed: number): Promise<TraceRequest[]> => {
    const path = join(dir, `${shape.kind}-${seed}.jsonl`);
    await writeSyntheticTrace(path, { shape, durationSeconds, seed, lengthSigma: 0, inputMeanTokens: 64, outputMeanTokens: 8 });
    return loadTrace(path);
  };

  it("sine: each quarter of the period gets ∫λ, summed over 10 periods", async () => {
    // λ(t) = 6 − 4·cos(2πt/200). Over a quarter period, ∫λ = 6·50 ∓ 4·200/(2π): the first and last
    // quarters (rising from, falling to the minimum) get 300 − 400/π ≈ 172.68, the middle two 300 + 400/π.
    const shape: LoadShape = { kind: "sine", minRps: 2, maxRps: 10, periodSeconds: 200 };
    const low = 10 * (300 - 400 / Math.PI);
    const high = 10 * (300 + 400 / Math.PI);
    for (const seed of [1, 2]) {
      const trace = await generate(shape, 2000, seed);
      const quarters = [0, 0, 0, 0];
      for (const r of trace) quarters[Math.floor((r.timestamp % 200_000) / 50_000)]! += 1;
      [low, high, high, low].forEach((expected, q) => {
        assertPoissonCount(quarters[q]!, expected, `seed ${seed}, quarter ${q + 1}`);
      });
    }
  });

  it("step: each step's window gets its rate × its length", async () => {
    const trace = await generate({ kind: "step", steps: parseSteps("0:2,300:10,600:1") }, 900, 3);
    assertPoissonCount(countBetween(trace, 0, 300), 600, "0–300 s at 2 req/s");
    assertPoissonCount(countBetween(trace, 300, 600), 3000, "300–600 s at 10 req/s");
    assertPoissonCount(countBetween(trace, 600, 900), 300, "600–900 s at 1 req/s");
  });

  it("burst: 19 bursts of 10 s at 20 req/s, 1 req/s elsewhere, none in the first period", async () => {
    const shape: LoadShape = { kind: "burst", baseRps: 1, burstRps: 20, burstLengthSeconds: 10, burstEverySeconds: 60 };
    const trace = await generate(shape, 1200, 4);
    const inBurst = trace.filter((r) => r.timestamp >= 60_000 && r.timestamp % 60_000 < 10_000).length;
    assertPoissonCount(inBurst, 19 * 10 * 20, "inside bursts");
    assertPoissonCount(trace.length - inBurst, (1200 - 19 * 10) * 1, "outside bursts");
    assertPoissonCount(countBetween(trace, 0, 60), 60, "first period");
  });
});
