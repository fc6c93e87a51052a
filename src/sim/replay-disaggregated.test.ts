import assert from "node:assert/strict";
import { test } from "node:test";
import { replay } from "./replay.js";
import type { TraceRequest } from "./trace.js";

// Long prompts, short outputs: prefill-heavy traffic where splitting the pools matters.
const trace: TraceRequest[] = Array.from({ length: 40 }, (_, i) => {
  const hashIds = [i % 4, 100 + i, 200 + i, 300 + i];
  return { timestamp: i * 150, inputLength: hashIds.length * 512, outputLength: 30, hashIds };
});
const base = { trace, policy: "kv", blockSize: 64, seed: 3 } as const;

test("a disaggregated replay is deterministic and completes every request through both pools", async () => {
  const options = { ...base, workers: 0, prefill: 2, decode: 2 };
  const a = await replay(options);
  const b = await replay(options);
  assert.deepEqual({ ...a, wall_seconds: 0 }, { ...b, wall_seconds: 0 });
  assert.equal(a.deployment, "disaggregated 2+2");
  assert.equal(a.completed, 40);
  assert.equal(a.local_prefills, 0);
  assert.ok(a.hit_rate > 0, "the prefill pool's KV routing finds the shared first blocks");
});

test("the modelled transfer delays the first token by its cost", async () => {
  const fast = await replay({ ...base, workers: 0, prefill: 2, decode: 2, transfer: { alphaMs: 0, bytesPerMs: 1e12 } });
  const slow = await replay({ ...base, workers: 0, prefill: 2, decode: 2, transfer: { alphaMs: 500, bytesPerMs: 1e12 } });
  assert.ok(slow.ttft_ms.p50 - fast.ttft_ms.p50 >= 499, `${fast.ttft_ms.p50} → ${slow.ttft_ms.p50}`);
});

test("a threshold above every prompt prefills everything on the decode workers", async () => {
  const r = await replay({ ...base, workers: 0, prefill: 2, decode: 2, disaggThreshold: 100_000 });
  assert.equal(r.local_prefills, 40);
  assert.equal(r.completed, 40);
});

test("goodput counts only the requests within the targets", async () => {
  const all = await replay({ ...base, workers: 4 });
  const strict = await replay({ ...base, workers: 4, slo: { ttftMs: 1e-6 } });
  assert.equal(all.goodput_req_s, all.completed / all.sim_seconds);
  assert.equal(strict.goodput_req_s, 0);
});

test("a disaggregated replay counts the prefill workers' host-tier hits", async () => {
  // 34 device blocks hold one 32-block prompt: the next one evicts most of the shared first blocks.
  const options = { ...base, workers: 0, prefill: 2, decode: 2, kvBlocks: 34 };
  const deviceOnly = await replay(options);
  const tiered = await replay({ ...options, hostKvBlocks: 512 });
  assert.equal(tiered.completed, 40);
  assert.equal(deviceOnly.host_hit_rate, 0);
  assert.ok(tiered.host_hit_rate > 0, "shared first blocks came back from the prefill workers' host tiers");
  assert.ok(tiered.hit_rate > deviceOnly.hit_rate, `${deviceOnly.hit_rate} → ${tiered.hit_rate}`);
});
