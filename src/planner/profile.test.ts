import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { ArmatureError } from "../protocol/index.js";
import { interpolateDecode, interpolatePrefill, parseProfile } from "./index.js";

const FIXTURE = new URL("./fixtures/tiny-profile.json", import.meta.url);
const text = readFileSync(FIXTURE, "utf8");
const profile = parseProfile(text, "tiny-profile.json");

/** The fixture as a mutable object, to break one field at a time. */
function fixture(): { prefill: Record<string, unknown>[]; decode: Record<string, unknown>[] } & Record<string, unknown> {
  return JSON.parse(text);
}

function refused(document: unknown, ...fragments: string[]): void {
  assert.throws(
    () => parseProfile(document, "worker.json"),
    (error: unknown) => {
      assert.ok(error instanceof ArmatureError);
      assert.equal(error.code, "CONFIG_INVALID");
      for (const fragment of ["worker.json", ...fragments]) assert.ok(error.message.includes(fragment), error.message);
      return true;
    },
  );
}

test("a profile is read from its text: prefill sorted by input length, decode as a full grid", () => {
  assert.equal(profile.source, "tiny-profile.json");
  assert.deepEqual(
    profile.prefill.map((p) => p.inputTokens),
    [1000, 2000, 4000],
  );
  assert.deepEqual(profile.decode.concurrency, [1, 16, 64]);
  assert.deepEqual(profile.decode.contextTokens, [1000, 3000]);
  assert.equal(profile.decode.cells[1]![1]!.itlMs, 32); // concurrency 16, context 3000
  assert.deepEqual(parseProfile(JSON.parse(text), "same.json").decode, profile.decode);
});

test("prefill is piecewise linear in input length and clamped outside the profiled range", () => {
  const at = (inputTokens: number) => {
    const { ttftMs, tokensPerSecond, interleavedMs, clamped } = interpolatePrefill(profile, inputTokens);
    return { ttftMs, tokensPerSecond, interleavedMs, clamped };
  };
  // 1500 is halfway from 1000 to 2000: TTFT 100 + 0.5·(250 − 100) = 175, throughput 10000 + 0.5·(8000 − 10000) = 9000.
  assert.deepEqual(at(1500), { ttftMs: 175, tokensPerSecond: 9000, interleavedMs: undefined, clamped: false });
  // 3000 is halfway from 2000 to 4000: 250 + 0.5·550 = 525, 8000 − 0.5·3000 = 6500.
  assert.deepEqual(at(3000), { ttftMs: 525, tokensPerSecond: 6500, interleavedMs: undefined, clamped: false });
  assert.deepEqual(at(4000), { ttftMs: 800, tokensPerSecond: 5000, interleavedMs: undefined, clamped: false });
  assert.deepEqual(at(200), { ttftMs: 100, tokensPerSecond: 10000, interleavedMs: undefined, clamped: true });
  assert.deepEqual(at(9000), { ttftMs: 800, tokensPerSecond: 5000, interleavedMs: undefined, clamped: true });
});

test("decode is bilinear over the grid and clamped at its edges", () => {
  // (40, 2000): u = (40 − 16)/(64 − 16) = 0.5, v = (2000 − 1000)/(3000 − 1000) = 0.5, so each value is the
  // mean of the cell's four corners (16,1000) (64,1000) (16,3000) (64,3000):
  //   ITL (20 + 40 + 32 + 64)/4 = 39; tokens/s (800 + 1600 + 500 + 1000)/4 = 975; KV (0.2 + 0.8 + 0.6 + 1.0)/4 = 0.65
  const middle = interpolateDecode(profile, 40, 2000);
  assert.equal(middle.itlMs, 39);
  assert.equal(middle.tokensPerSecond, 975);
  assert.ok(Math.abs(middle.kvUsage - 0.65) < 1e-12);
  assert.equal(middle.clamped, false);
  // (16, 2100): on a grid line of concurrency, v = 0.55: ITL 20 + 0.55·(32 − 20) = 26.6.
  assert.ok(Math.abs(interpolateDecode(profile, 16, 2100).itlMs - 26.6) < 1e-12);
  assert.deepEqual(interpolateDecode(profile, 128, 5000), { itlMs: 64, tokensPerSecond: 1000, kvUsage: 1, clamped: true });
  assert.deepEqual(interpolateDecode(profile, 0.5, 500), { itlMs: 10, tokensPerSecond: 100, kvUsage: 0.01, clamped: true });
});

test("a profile that is not JSON, or of another version, is refused naming the file", () => {
  refused("{ version: 1", "not JSON");
  refused({ ...fixture(), version: 2 }, "version must be 1, got 2");
  refused([], "the document must be an object");
});

test("bad fields are refused by their path", () => {
  const negative = fixture();
  negative.decode[1]!.itlMs = -3;
  refused(negative, "decode[1].itlMs must be above 0, got -3");
  const misspelled = fixture();
  misspelled.prefill[0] = { inputTokens: 2000, ttft_ms: 250, tokensPerSecond: 8000 };
  refused(misspelled, "unknown field prefill[0].ttft_ms");
  const missing = fixture();
  delete missing.prefill[2]!.tokensPerSecond;
  refused(missing, "prefill[2].tokensPerSecond must be a number, got nothing");
  const fractional = fixture();
  fractional.prefill[1]!.inputTokens = 1000.5;
  refused(fractional, "prefill[1].inputTokens must be a whole number");
  const overfull = fixture();
  overfull.decode[5]!.kvUsage = 1.2;
  refused(overfull, "decode[5].kvUsage must be a fraction from 0 to 1, got 1.2");
  refused({ ...fixture(), prefill: [] }, "prefill must be a non-empty array");
  refused({ ...fixture(), extra: true }, "unknown field extra");
});

test("repeated points and holes in the decode grid are refused", () => {
  const repeatedPrefill = fixture();
  repeatedPrefill.prefill[2]!.inputTokens = 2000;
  refused(repeatedPrefill, "prefill[2] repeats inputTokens 2000 of prefill[0]");
  const repeatedDecode = fixture();
  repeatedDecode.decode[4] = { ...repeatedDecode.decode[1]! };
  refused(repeatedDecode, "decode[4] repeats the point at concurrency 16, contextTokens 1000 (decode[1])");
  const hole = fixture();
  hole.decode.splice(4, 1);
  refused(hole, "decode has no point at concurrency 16, contextTokens 3000");
});

test("measured interleaving is read with the prefill points, interpolated like them, and every point has it or none", () => {
  const measured = fixture();
  measured.prefill.forEach((point, k) => {
    point.interleavedMs = [90, 240, 780][k];
  });
  // 1500 is halfway from 1000 to 2000: 90 + 0.5·(240 − 90) = 165.
  assert.equal(interpolatePrefill(parseProfile(measured, "m.json"), 1500).interleavedMs, 165);
  const partial = fixture();
  partial.prefill[1]!.interleavedMs = 240;
  refused(partial, "prefill[0] has no interleavedMs, which prefill[1] has: every prefill point has it or none");
  const negative = fixture();
  negative.prefill.forEach((point) => {
    point.interleavedMs = -1;
  });
  refused(negative, "prefill[0].interleavedMs must be 0 or more, got -1");
});
