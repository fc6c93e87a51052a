import assert from "node:assert/strict";
import { test } from "node:test";
import { MockerEngine, polynomialTimingModel } from "../engines/index.js";
import { interpolateDecode, interpolatePrefill } from "../planner/index.js";
import { VirtualClock } from "../runtime/index.js";
import { formatProfileJson } from "./profile-document.js";
import {
  compileSweepOptions,
  defaultSweepAxes,
  describeSweepProgress,
  runProfileSweep,
  type SweepProgress,
} from "./profile-sweep.js";

const BLOCK_SIZE = 16;
const KV_BLOCKS = 1024;
const OUTPUT_TOKENS = 32;

/** A mocker on a virtual clock with Dynamo's polynomial step times, and a small cache so KV usage moves. */
function mocker(kvBlocks = KV_BLOCKS): { engine: MockerEngine; clock: VirtualClock } {
  const clock = new VirtualClock();
  const engine = new MockerEngine({ clock, blockSize: BLOCK_SIZE, kvBlocks, timing: polynomialTimingModel(1) });
  return { engine, clock };
}

test("on the mocker, TTFT at each input length is the timing model's prefill time", async () => {
  const { engine, clock } = mocker();
  const model = polynomialTimingModel(1);
  const progress: SweepProgress[] = [];
  try {
    const profile = await runProfileSweep(engine, {
      clock,
      inputLengths: [64, 512, 2048, 8192],
      concurrency: [1],
      contextLengths: [256],
      outputTokens: OUTPUT_TOKENS,
      onProgress: (p) => progress.push(p),
    });
    assert.deepEqual(
      profile.prefill.map((p) => p.inputTokens),
      [64, 512, 2048, 8192],
    );
    for (const point of profile.prefill) {
      // Virtual time moves by exactly each step's modelled duration, and a prompt of at most
      // maxBatchedTokens (8192) is one step: only float rounding of the clock's sum separates them.
      assert.ok(Math.abs(point.ttftMs - model.prefillMs(point.inputTokens)) < 1e-6, `${point.inputTokens}: ${point.ttftMs}`);
      assert.ok(Math.abs(point.tokensPerSecond - (point.inputTokens / point.ttftMs) * 1000) < 1e-6);
    }
    const prefillRuns = progress.flatMap((p) => (p.phase === "prefill" ? [p.ttftSamplesMs.length] : []));
    assert.deepEqual(prefillRuns, [3, 3, 3, 3], "each TTFT is the median of 3 runs by default");
  } finally {
    await engine.close();
  }
});

test("on the mocker, ITL grows with concurrency as the model's decode time at the measured KV usage", async () => {
  const { engine, clock } = mocker();
  const model = polynomialTimingModel(1);
  try {
    const profile = await runProfileSweep(engine, {
      clock,
      inputLengths: [128],
      concurrency: [1, 2, 4, 8],
      contextLengths: [256, 1024],
      outputTokens: OUTPUT_TOKENS,
    });
    assert.equal(profile.decode.length, 8);
    for (const contextTokens of [256, 1024]) {
      const row = profile.decode.filter((p) => p.contextTokens === contextTokens);
      assert.deepEqual(
        row.map((p) => p.concurrency),
        [1, 2, 4, 8],
      );
      for (let k = 1; k < row.length; k++) {
        assert.ok(
          row[k]!.itlMs > row[k - 1]!.itlMs,
          `context ${contextTokens}: ITL rises from concurrency ${row[k - 1]!.concurrency}`,
        );
      }
      for (const point of row) {
        const prompt = contextTokens - OUTPUT_TOKENS / 2;
        // Every step of the steady window decodes the whole batch, with the KV between the prompts
        // alone and the prompts with all output: the ITL lies between the model's times there.
        const lowUsage = (point.concurrency * Math.ceil(prompt / BLOCK_SIZE)) / KV_BLOCKS;
        const highUsage = (point.concurrency * Math.ceil((prompt + OUTPUT_TOKENS) / BLOCK_SIZE)) / KV_BLOCKS;
        assert.ok(point.kvUsage >= lowUsage && point.kvUsage <= highUsage, `kvUsage ${point.kvUsage}`);
        assert.ok(
          point.itlMs >= model.decodeMs(lowUsage) - 1e-9 && point.itlMs <= model.decodeMs(highUsage) + 1e-9,
          `c ${point.concurrency}, context ${contextTokens}: ITL ${point.itlMs} outside ${model.decodeMs(lowUsage)}…${model.decodeMs(highUsage)}`,
        );
        // The whole batch gets a token every step, so throughput is concurrency per ITL.
        assert.ok(Math.abs(point.tokensPerSecond - (point.concurrency * 1000) / point.itlMs) < 1e-6 * point.tokensPerSecond);
      }
    }
  } finally {
    await engine.close();
  }
});

test("a batch that never decodes all together runs again with more output tokens", async () => {
  const { engine, clock } = mocker();
  const progress: SweepProgress[] = [];
  try {
    // 8 prompts of 2032 tokens take two prefill steps of 8192: with 2 output tokens the first
    // requests end before the last start, so there is no window where all 8 decode.
    await runProfileSweep(engine, {
      clock,
      inputLengths: [64],
      concurrency: [8],
      contextLengths: [2033],
      outputTokens: 2,
      onProgress: (p) => progress.push(p),
    });
    const decode = progress.find((p) => p.phase === "decode");
    assert.ok(decode?.phase === "decode");
    assert.equal(decode.steady, true);
    assert.ok(decode.outputTokens > 2, `output tokens ${decode.outputTokens}`);
  } finally {
    await engine.close();
  }
});

test("the sweep's profile passes parseProfile and the planner interpolates it", async () => {
  const { engine, clock } = mocker();
  try {
    const document = await runProfileSweep(engine, {
      clock,
      inputLengths: [256, 1024],
      concurrency: [1, 4],
      contextLengths: [256, 512],
      outputTokens: OUTPUT_TOKENS,
      description: "mocker test",
    });
    const { text, profile } = formatProfileJson(document, "test.json");
    assert.equal(JSON.parse(text).version, 1);
    assert.equal(profile.description, "mocker test");
    const [short, long] = profile.prefill;
    const halfway = interpolatePrefill(profile, 640);
    assert.equal(halfway.clamped, false);
    assert.ok(Math.abs(halfway.ttftMs - (short!.ttftMs + long!.ttftMs) / 2) < 1e-9);
    const corner = document.decode.find((p) => p.concurrency === 4 && p.contextTokens === 512)!;
    const read = interpolateDecode(profile, 4, 512);
    assert.ok(Math.abs(read.itlMs - corner.itlMs) < 1e-4 * corner.itlMs, "rounding to 6 digits keeps the value");
    const middle = interpolateDecode(profile, 2.5, 384);
    const itls = document.decode.map((p) => p.itlMs);
    assert.ok(middle.itlMs > Math.min(...itls) && middle.itlMs < Math.max(...itls));
  } finally {
    await engine.close();
  }
});

test("sweep options that the engine cannot hold are refused naming the flag", () => {
  const engine = new MockerEngine({ blockSize: BLOCK_SIZE, kvBlocks: KV_BLOCKS, contextLength: 4096 });
  const info = engine.info;
  const llamacpp = { ...info, kind: "llamacpp" as const, maxSequences: 2, contextLength: 512, totalKvBlocks: 64 };
  const refused = (options: Parameters<typeof compileSweepOptions>[1], pattern: RegExp, on = info): void => {
    assert.throws(
      () => compileSweepOptions(on, options),
      (error: Error & { code?: string }) => error.code === "CONFIG_INVALID" && pattern.test(error.message),
    );
  };
  refused({ inputLengths: [4096] }, /--input-lengths 4096 .*--context-size/);
  refused({ inputLengths: [] }, /--input-lengths needs at least one value/);
  refused({ concurrency: [1, 2, 2] }, /--concurrency repeats 2/);
  refused({ contextLengths: [0] }, /--context-lengths takes whole numbers above 0/);
  refused({ contextLengths: [16], outputTokens: 32 }, /--context-lengths 16 must be above half of --output-tokens/);
  refused({ concurrency: [64], contextLengths: [1024] }, /--concurrency 64 at --context-lengths 1024 needs .*--kv-blocks/);
  refused({ outputTokens: 1 }, /--output-tokens/);
  refused({ requestsPerPoint: 0 }, /--requests-per-point/);
  refused({ concurrency: [4] }, /--concurrency 4 is above the 2 sequences .*--sequences/, llamacpp);
  refused({ contextLengths: [500] }, /--context-lengths 500 .*--context-size/, llamacpp);
  // The defaults fit the engine they were made for.
  const defaults = compileSweepOptions(llamacpp);
  assert.deepEqual(defaults.concurrency, [1, 2]);
  assert.deepEqual(defaultSweepAxes(llamacpp).inputLengths, [64, 128, 256]);
  assert.ok(defaults.contextLengths.every((l) => l + 32 <= 512));
});

test("on the mocker, what a prefill adds to the decode steps it joins is the timing model's prefill time", async () => {
  // A cache so large that the prefill's blocks move KV usage, and so the decode step, by < 0.01 ms.
  const { engine, clock } = mocker(1 << 20);
  const model = polynomialTimingModel(1);
  const progress: SweepProgress[] = [];
  try {
    const profile = await runProfileSweep(engine, {
      clock,
      inputLengths: [64, 512, 2048],
      concurrency: [1, 4, 16],
      contextLengths: [256],
      outputTokens: OUTPUT_TOKENS,
      onProgress: (p) => progress.push(p),
    });
    // The step a prefill joins takes the model's prefill time on top of the decode step (Dynamo's
    // mocker: step = prefill(new tokens) + decode(KV usage)); 4 + 2048 tokens fit one step's budget.
    for (const point of profile.prefill) {
      const expected = model.prefillMs(point.inputTokens);
      assert.ok(
        Math.abs((point.interleavedMs ?? 0) - expected) < 0.05,
        `${point.inputTokens}: ${point.interleavedMs} vs ${expected}`,
      );
    }
    const batches = progress.flatMap((p) => (p.phase === "interleave" && p.measured ? [p.concurrency] : []));
    assert.deepEqual(batches, [4, 4, 4], "the largest profiled concurrency up to 8");
    const { profile: parsed } = formatProfileJson(profile, "interleaved.json");
    assert.ok(
      parsed.prefill.every((p) => p.interleavedMs !== undefined),
      "written and read back",
    );
  } finally {
    await engine.close();
  }
});

test("a batch too short to show a step before the prefill leaves the profile without interleaving, saying why", async () => {
  const { engine, clock } = mocker();
  const progress: SweepProgress[] = [];
  try {
    const profile = await runProfileSweep(engine, {
      clock,
      inputLengths: [64, 512],
      concurrency: [2],
      contextLengths: [256],
      outputTokens: 4,
      onProgress: (p) => progress.push(p),
    });
    assert.ok(profile.prefill.every((p) => p.interleavedMs === undefined));
    const notes = progress.filter((p) => p.phase === "interleave").map(describeSweepProgress);
    assert.deepEqual(notes, [
      "interleaved prefill of 64 tokens: not measured (--output-tokens 4 leaves too few tokens to see a step before and during a prefill); the planner uses TTFT",
    ]);
  } finally {
    await engine.close();
  }
});
