import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { loadTrace } from "../sim/index.js";
import type { LoadShape } from "./load-shape.js";
import { formatMooncakeLine } from "./mooncake-jsonl.js";
import {
  compileSyntheticTraceOptions,
  generateSyntheticTrace,
  type SyntheticRequest,
  type SyntheticTraceOptions,
  writeSyntheticTrace,
} from "./synthetic-trace.js";

const sine: LoadShape = { kind: "sine", minRps: 2, maxRps: 10, periodSeconds: 200 };

/** The parent of a continuing request; fails the test for one that opens a conversation. */
function parentOf(trace: readonly SyntheticRequest[], request: SyntheticRequest): SyntheticRequest {
  assert.ok(request.parentIndex !== undefined);
  const parent = trace[request.parentIndex];
  assert.ok(parent !== undefined);
  return parent;
}

describe("writeSyntheticTrace", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "armature-synthetic-trace-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("writes a Mooncake trace that loadTrace reads back unchanged, one hash id per 512 tokens", async () => {
    const path = join(dir, "roundtrip.jsonl");
    const written = await writeSyntheticTrace(path, { shape: sine, durationSeconds: 300, multiTurnShare: 0.4, systemBlocks: 3 });
    const loaded = await loadTrace(path);
    assert.equal(loaded.length, written.length);
    assert.ok(loaded.length > 1000);
    loaded.forEach((row, i) => {
      const { parentIndex: _, ...request } = written[i]!;
      assert.deepEqual(row, request);
      assert.equal(row.hashIds.length, Math.ceil(row.inputLength / 512));
      assert.ok(Number.isInteger(row.timestamp) && row.timestamp >= 0 && row.timestamp < 300_000);
    });
  });

  it("gives byte-identical files for the same seed and different files for another", async () => {
    const options: SyntheticTraceOptions = { shape: sine, durationSeconds: 200, multiTurnShare: 0.5, systemBlocks: 1, seed: 7 };
    await writeSyntheticTrace(join(dir, "a.jsonl"), options);
    await writeSyntheticTrace(join(dir, "b.jsonl"), options);
    await writeSyntheticTrace(join(dir, "c.jsonl"), { ...options, seed: 8 });
    const [a, b, c] = await Promise.all(["a", "b", "c"].map((name) => readFile(join(dir, `${name}.jsonl`))));
    assert.ok(a!.equals(b!));
    assert.ok(!a!.equals(c!));
  });
});

describe("generateSyntheticTrace", () => {
  it("keeps the arrivals of a seed whatever the content options", () => {
    const times = (options: Partial<SyntheticTraceOptions>) =>
      generateSyntheticTrace({ shape: sine, durationSeconds: 100, seed: 5, ...options }).map((r) => r.timestamp);
    assert.deepEqual(times({}), times({ inputMeanTokens: 100, multiTurnShare: 0.7, systemBlocks: 4 }));
  });

  it("draws lognormal lengths: the mean as asked, and Φ(σ/2) of them below it", () => {
    // Lognormal with mean m and σ: μ = ln m − σ²/2, so P(X < m) = Φ((ln m − μ)/σ) = Φ(σ/2) = Φ(0.25) ≈ 0.5987
    // (a symmetric distribution would give 0.5). Over n draws the sample mean has standard deviation
    // m·√(e^σ² − 1)/√n and the share √(p(1 − p)/n); both must be within 4 of those.
    const trace = generateSyntheticTrace({ shape: sine, durationSeconds: 2000, inputMeanTokens: 3000, outputMeanTokens: 150 });
    const n = trace.length;
    const cv = Math.sqrt(Math.exp(0.25) - 1);
    for (const [mean, lengths] of [
      [3000, trace.map((r) => r.inputLength)],
      [150, trace.map((r) => r.outputLength)],
    ] as const) {
      const sampleMean = lengths.reduce((s, x) => s + x, 0) / n;
      assert.ok(Math.abs(sampleMean - mean) <= (4 * mean * cv) / Math.sqrt(n), `mean ${sampleMean}, expected ${mean}`);
      const below = lengths.filter((x) => x < mean).length / n;
      assert.ok(Math.abs(below - 0.5987) <= 4 * Math.sqrt((0.5987 * 0.4013) / n), `share below the mean ${below}`);
    }
  });

  it("continues conversations: a share of requests extend an earlier request's full blocks with new ids", () => {
    const share = 0.5;
    const trace = generateSyntheticTrace({ shape: sine, durationSeconds: 1000, multiTurnShare: share, systemBlocks: 2, seed: 3 });
    const continuing = trace.filter((r) => r.parentIndex !== undefined);
    // Every request but the first may continue (a conversation is open from then on): binomial count.
    const expected = share * (trace.length - 1);
    assert.ok(Math.abs(continuing.length - expected) <= 4 * Math.sqrt(expected * (1 - share)), `${continuing.length} continuing`);
    let nextId = 2;
    trace.forEach((request, index) => {
      assert.deepEqual(request.hashIds.slice(0, 2), [0, 1], "the system prompt opens every request");
      if (request.parentIndex !== undefined) {
        const parent = parentOf(trace, request);
        assert.ok(request.parentIndex < index);
        assert.ok(request.inputLength > parent.inputLength + parent.outputLength);
        const full = Math.floor(parent.inputLength / 512);
        assert.deepEqual(request.hashIds.slice(0, full), parent.hashIds.slice(0, full));
      }
      const shared = request.parentIndex === undefined ? 2 : Math.floor(parentOf(trace, request).inputLength / 512);
      for (const id of request.hashIds.slice(shared)) assert.equal(id, nextId++, "new ids count up from the system prompt's");
    });
  });

  it("shares a whole previous turn when its prompt fills whole blocks (hand-worked, σ = 0)", () => {
    // System prompt 1 block (512 tokens), new messages 1024 tokens, outputs 512: a new conversation's prompt
    // is 1536 tokens (3 ids), each next turn adds 512 + 1024 tokens, so it repeats all of its parent's ids.
    const trace = generateSyntheticTrace({
      shape: sine,
      durationSeconds: 100,
      lengthSigma: 0,
      inputMeanTokens: 1024,
      outputMeanTokens: 512,
      systemBlocks: 1,
      multiTurnShare: 0.6,
    });
    const first = trace[0]!;
    assert.equal(
      formatMooncakeLine(first),
      `{"timestamp":${first.timestamp},"input_length":1536,"output_length":512,"hash_ids":[0,1,2]}`,
    );
    const turns = (r: SyntheticRequest): number => (r.parentIndex === undefined ? 1 : 1 + turns(parentOf(trace, r)));
    for (const request of trace) {
      assert.equal(request.inputLength, 1536 * turns(request));
      assert.equal(request.hashIds.length, 3 * turns(request));
      if (request.parentIndex !== undefined) {
        const parent = parentOf(trace, request);
        assert.deepEqual(request.hashIds.slice(0, parent.hashIds.length), parent.hashIds);
      }
    }
    assert.ok(trace.some((r) => turns(r) >= 3));
  });

  it("gives a previous turn's partly filled last block a new id (hand-worked, σ = 0)", () => {
    // Messages 700 tokens, outputs 100: turn 1 is 700 tokens (ids [a, b], b partial); turn 2 is
    // 700 + 100 + 700 = 1500 tokens, 3 ids, sharing only a; turn 3 is 2300 tokens, 5 ids, sharing turn 2's first 2.
    const trace = generateSyntheticTrace({
      shape: sine,
      durationSeconds: 100,
      lengthSigma: 0,
      inputMeanTokens: 700,
      outputMeanTokens: 100,
      multiTurnShare: 0.6,
    });
    const byTurns = new Map<number, [number, number]>([
      [700, [2, 0]],
      [1500, [3, 1]],
      [2300, [5, 2]],
    ]);
    let seenThird = false;
    for (const request of trace) {
      const turn = byTurns.get(request.inputLength);
      if (turn === undefined) continue; // turn 4 and later
      const [ids, shared] = turn;
      seenThird ||= request.inputLength === 2300;
      assert.equal(request.hashIds.length, ids);
      if (request.parentIndex === undefined) continue;
      const parent = parentOf(trace, request);
      assert.deepEqual(request.hashIds.slice(0, shared), parent.hashIds.slice(0, shared));
      assert.ok(!parent.hashIds.includes(request.hashIds[shared]!), "the block after the shared ones is new");
    }
    assert.ok(seenThird);
  });
});

describe("priority mix", () => {
  it("gives each class its share of requests, keeps arrivals and content, and round-trips through the file", async () => {
    const plain = generateSyntheticTrace({ shape: sine, durationSeconds: 600 });
    const mixed = generateSyntheticTrace({
      shape: sine,
      durationSeconds: 600,
      priorityMix: [
        { priority: 0, share: 0.25 },
        { priority: 10, share: 0.75 },
      ],
    });
    assert.equal(mixed.length, plain.length);
    assert.ok(mixed.length > 3000);
    const urgent = mixed.filter((r) => r.priority === 0).length;
    assert.equal(urgent + mixed.filter((r) => r.priority === 10).length, mixed.length, "every request has one of the classes");
    // Binomial(n, 0.25): within 4 standard deviations.
    const sd = Math.sqrt(mixed.length * 0.25 * 0.75);
    assert.ok(Math.abs(urgent - mixed.length * 0.25) < 4 * sd, `${urgent} of ${mixed.length} urgent`);
    mixed.forEach((r, i) => {
      const { priority: _, ...rest } = r;
      assert.deepEqual(rest, plain[i], "the mix changes nothing else");
    });
    const dir = await mkdtemp(join(tmpdir(), "armature-priority-mix-"));
    try {
      const path = join(dir, "mix.jsonl");
      await writeSyntheticTrace(path, { shape: sine, durationSeconds: 60, priorityMix: [{ priority: -1, share: 1 }] });
      const loaded = await loadTrace(path);
      assert.ok(loaded.length > 0 && loaded.every((r) => r.priority === -1));
      assert.match(await readFile(path, "utf8"), /"hash_ids":\[[0-9,]*\],"priority":-1\}/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("loadTrace reads priority and deadline_ms, and refuses malformed ones naming the line", async () => {
    const dir = await mkdtemp(join(tmpdir(), "armature-trace-fields-"));
    try {
      const path = join(dir, "t.jsonl");
      const row = '{"timestamp":0,"input_length":10,"output_length":2,"hash_ids":[1]';
      await writeFile(path, `${row},"priority":3,"deadline_ms":1500}\n${row}}\n`);
      const [first, second] = await loadTrace(path);
      assert.deepEqual([first?.priority, first?.deadlineMs], [3, 1500]);
      assert.deepEqual([second?.priority, second?.deadlineMs], [undefined, undefined]);
      for (const bad of ['"priority":1.5', '"priority":"high"', '"deadline_ms":0', '"deadline_ms":"soon"']) {
        await writeFile(path, `${row}}\n${row},${bad}}\n`);
        await assert.rejects(loadTrace(path), /t\.jsonl:2: (priority|deadline_ms) must be/, bad);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("compileSyntheticTraceOptions", () => {
  it("fills in the documented defaults", () => {
    assert.deepEqual(compileSyntheticTraceOptions({ shape: sine, durationSeconds: 60 }), {
      shape: sine,
      durationSeconds: 60,
      seed: 1,
      inputMeanTokens: 3000,
      outputMeanTokens: 150,
      lengthSigma: 0.5,
      multiTurnShare: 0,
      systemBlocks: 0,
      blockSize: 512,
      priorityMix: [],
    });
  });

  it("refuses bad values, naming the flag", () => {
    const cases: [Partial<SyntheticTraceOptions>, string][] = [
      [{ durationSeconds: 0 }, "--duration"],
      [{ seed: 1.5 }, "--seed"],
      [{ inputMeanTokens: 0.5 }, "--input-mean"],
      [{ lengthSigma: -1 }, "--length-sigma"],
      [{ multiTurnShare: 1 }, "--multi-turn-share"],
      [{ systemBlocks: 1.5 }, "--system-blocks"],
      [{ blockSize: 0 }, "--block-size"],
      [{ priorityMix: [{ priority: 0, share: 0.5 }] }, "--priority-mix"],
      [
        {
          priorityMix: [
            { priority: 0, share: 0.5 },
            { priority: 0, share: 0.5 },
          ],
        },
        "--priority-mix",
      ],
      [{ priorityMix: [{ priority: 0.5, share: 1 }] }, "--priority-mix"],
      [{ shape: { kind: "sine", minRps: 3, maxRps: 1, periodSeconds: 10 } }, "--min-rate"],
    ];
    for (const [options, flag] of cases) {
      assert.throws(() => compileSyntheticTraceOptions({ shape: sine, durationSeconds: 60, ...options }), {
        code: "CONFIG_INVALID",
        param: flag,
      });
    }
  });
});
