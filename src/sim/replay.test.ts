import assert from "node:assert/strict";
import { test } from "node:test";
import { sharedCacheHitBound } from "./cache-bound.js";
import { replay } from "./replay.js";
import { synthesizeTokens, type TraceRequest } from "./trace.js";
import { renderTtftChart } from "./ttft-chart.js";

// A small conversation-like trace: 6 sessions, each turn extending the session's previous prompt.
function conversationTrace(): TraceRequest[] {
  const trace: TraceRequest[] = [];
  let nextId = 1000;
  for (let turn = 0; turn < 5; turn++) {
    for (let session = 0; session < 6; session++) {
      const hashIds = [0, ...Array.from({ length: turn + 2 }, (_, k) => session * 100 + k)];
      hashIds.push(nextId++);
      trace.push({ timestamp: turn * 4000 + session * 300, inputLength: hashIds.length * 64 - 10, outputLength: 20, hashIds });
    }
  }
  return trace;
}

test("equal hash ids give equal token blocks, different ids different ones", () => {
  const a = synthesizeTokens({ timestamp: 0, inputLength: 128, outputLength: 1, hashIds: [1, 2] }, 64, 32000, 0);
  const b = synthesizeTokens({ timestamp: 0, inputLength: 128, outputLength: 1, hashIds: [1, 3] }, 64, 32000, 1);
  assert.deepEqual(a.slice(0, 64), b.slice(0, 64));
  assert.notDeepEqual(a.slice(64), b.slice(64));
});

test("the same trace and seed give the same numbers", async () => {
  const options = { trace: conversationTrace(), workers: 3, blockSize: 16, traceBlockSize: 64, seed: 7 } as const;
  for (const policy of ["kv", "random"] as const) {
    const a = await replay({ ...options, policy });
    const b = await replay({ ...options, policy });
    assert.deepEqual({ ...a, wall_seconds: 0 }, { ...b, wall_seconds: 0 });
    assert.equal(a.completed, 30);
  }
});

test("kv routing finds the sessions' cached prefixes that round-robin scatters", async () => {
  const trace = conversationTrace();
  const options = { trace, workers: 3, blockSize: 16, traceBlockSize: 64 } as const;
  const kv = await replay({ ...options, policy: "kv" });
  const rr = await replay({ ...options, policy: "round-robin" });
  assert.ok(kv.hit_rate > rr.hit_rate, `kv ${kv.hit_rate} vs round-robin ${rr.hit_rate}`);
  assert.ok(kv.hit_rate <= sharedCacheHitBound(trace, 64, 16) + 1e-9);
});

test("a host tier serves prefixes the devices evicted: higher hit rate, part of it from the host", async () => {
  // 40 device blocks per worker (the longest request needs 33) cannot keep 6 sessions' growing prompts; 256 host blocks can.
  const options = {
    trace: conversationTrace(),
    workers: 2,
    blockSize: 16,
    traceBlockSize: 64,
    kvBlocks: 40,
    policy: "kv",
  } as const;
  const deviceOnly = await replay(options);
  const tiered = await replay({ ...options, hostKvBlocks: 256 });
  const again = await replay({ ...options, hostKvBlocks: 256 });
  assert.deepEqual([deviceOnly.completed, tiered.completed], [30, 30]);
  assert.equal(deviceOnly.host_hit_rate, 0);
  assert.ok(tiered.host_hit_rate > 0, "some hits came back from the host");
  assert.ok(tiered.hit_rate > deviceOnly.hit_rate, `tiered ${tiered.hit_rate} vs device only ${deviceOnly.hit_rate}`);
  assert.ok(tiered.hit_rate <= sharedCacheHitBound(options.trace, 64, 16) + 1e-9);
  assert.deepEqual({ ...tiered, wall_seconds: 0 }, { ...again, wall_seconds: 0 }, "deterministic with tiers too");
});

/** Two KV-routed workers whose 40 device and 48 host blocks lose most of 6 sessions' prompts. */
function smallTiers() {
  return {
    trace: conversationTrace(),
    workers: 2,
    blockSize: 16,
    traceBlockSize: 64,
    kvBlocks: 40,
    hostKvBlocks: 48,
    policy: "kv",
  } as const;
}

test("a disk tier keeps prefixes a small host tier loses: higher hit rate, and each tier's share within it", async () => {
  // 40 device and 48 host blocks per worker lose most of 6 sessions' growing prompts; a session's
  // blocks reach disk (512) from their second use, and its next turn finds them there. Disk and
  // object store at 10 GB/s: loading a block back beats recomputing it (6.3 GB/s is the break-even
  // of 131,072 KV bytes per token at the model's 48,400 prefill tokens/s).
  const options = { ...smallTiers(), diskGbps: 10, objectGbps: 10 };
  const hostOnly = await replay(options);
  const withDisk = await replay({ ...options, diskKvBlocks: 512 });
  const allTiers = await replay({ ...options, diskKvBlocks: 512, objectKvBlocks: 1024 });
  assert.deepEqual([hostOnly.completed, withDisk.completed, allTiers.completed], [30, 30, 30]);
  assert.equal(hostOnly.disk_hit_rate, 0);
  assert.ok(withDisk.disk_hit_rate > 0, "some hits came back from disk");
  assert.ok(withDisk.hit_rate > hostOnly.hit_rate, `with disk ${withDisk.hit_rate} vs host only ${hostOnly.hit_rate}`);
  assert.equal(withDisk.object_hit_rate, 0);
  assert.ok(allTiers.object_hit_rate > 0, "some hits came from the shared object tier");
  for (const r of [hostOnly, withDisk, allTiers]) {
    const parts = [r.host_hit_rate, r.disk_hit_rate, r.object_hit_rate];
    for (const part of parts) assert.ok(part >= 0 && part <= r.hit_rate, `${part} outside [0, ${r.hit_rate}]`);
    const sum = r.host_hit_rate + r.disk_hit_rate + r.object_hit_rate;
    assert.ok(sum <= r.hit_rate + 1e-12, `tiers ${parts} add up past ${r.hit_rate}`);
    assert.ok(r.hit_rate <= sharedCacheHitBound(options.trace, 64, 16) + 1e-9);
  }
});

test("tiers slower than recomputing are left unread: no hit from them, and TTFT no worse than without them", async () => {
  // The defaults: disk at 5 GB/s and the object store at 1 GB/s, below the 6.3 GB/s at which
  // loading 131,072 bytes a token back beats the model's 48,400 prefill tokens/s.
  const options = smallTiers();
  const hostOnly = await replay(options);
  const slowTiers = await replay({ ...options, diskKvBlocks: 512, objectKvBlocks: 1024 });
  assert.equal(slowTiers.completed, 30);
  assert.equal(slowTiers.disk_hit_rate, 0);
  assert.equal(slowTiers.object_hit_rate, 0);
  assert.ok(slowTiers.host_hit_rate > 0, "the host tier (25 GB/s) still pays");
  assert.ok(
    slowTiers.ttft_ms.mean <= hostOnly.ttft_ms.mean * 1.001,
    `TTFT ${slowTiers.ttft_ms.mean} ms with the slow tiers, ${hostOnly.ttft_ms.mean} ms without`,
  );
});

test("a shared object tier lets round-robin find prefixes another worker computed", async () => {
  // At 10 GB/s loading a block back from the store beats recomputing it.
  const options = {
    trace: conversationTrace(),
    workers: 3,
    blockSize: 16,
    traceBlockSize: 64,
    objectGbps: 10,
    policy: "round-robin",
  } as const;
  const alone = await replay(options);
  const shared = await replay({ ...options, objectKvBlocks: 1024 });
  assert.equal(alone.object_hit_rate, 0);
  // Every session's earlier turns are in the store, whichever worker ran them: the unlimited
  // shared cache's bound is reached.
  assert.ok(Math.abs(shared.hit_rate - sharedCacheHitBound(options.trace, 64, 16)) < 1e-9, `${shared.hit_rate}`);
  assert.ok(shared.object_hit_rate > 0 && shared.object_hit_rate <= shared.hit_rate);
});

test("the TTFT chart draws one curve and one legend entry per policy", () => {
  const svg = renderTtftChart(
    [
      { name: "kv", ttftMs: [5, 10, 20] },
      { name: "round-robin <rr>", ttftMs: [8, 30, 90] },
    ],
    "t",
  );
  assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.equal(svg.match(/<polyline /g)?.length, 2);
  assert.match(svg, /round-robin &lt;rr&gt;/);
});

test("under overload the urgent class waits less than the deferred one, which holds every refusal; deadlines shed at the router", async () => {
  // 400 requests at 50 per second on one worker that may run 3 sequences: far past what it serves.
  const trace: TraceRequest[] = Array.from({ length: 400 }, (_, i) => ({
    timestamp: i * 20,
    inputLength: 600,
    outputLength: 40,
    hashIds: [i * 2, i * 2 + 1],
    priority: i % 4 === 0 ? 0 : 10,
  }));
  const options = {
    trace,
    policy: "kv",
    workers: 1,
    blockSize: 16,
    traceBlockSize: 512,
    busy: { activeSequencesFrac: 3 / 256, queueSize: 64 },
  } as const;
  const result = await replay(options);
  const [urgent, deferred] = result.by_priority ?? [];
  assert.ok(urgent && deferred, "one row per class");
  assert.deepEqual([urgent.priority, urgent.requests, deferred.priority, deferred.requests], [0, 100, 10, 300]);
  assert.equal(urgent.rejected, 0, "the full queue gives deferred requests' places to urgent ones");
  assert.ok(deferred.rejected > 0, "the overload sheds deferred requests");
  assert.equal(result.rejected, deferred.rejected);
  assert.ok(
    urgent.ttft_ms.p99 < deferred.ttft_ms.p50,
    `urgent p99 ${urgent.ttft_ms.p99} ms, deferred p50 ${deferred.ttft_ms.p50} ms`,
  );
  // The same overload with a 2 s deadline on every request: those whose deadline passes while they
  // wait are shed at the router (rejected), not cut off at the worker.
  const withDeadlines = await replay({ ...options, trace: trace.map((r) => ({ ...r, deadlineMs: 2000 })) });
  assert.ok(withDeadlines.rejected > result.rejected, `${withDeadlines.rejected} vs ${result.rejected}`);
  assert.equal(withDeadlines.completed + withDeadlines.rejected, 400, "every request either completed or was shed");
});

test("a trace of one class reports no classes", async () => {
  const result = await replay({ trace: conversationTrace(), policy: "kv", workers: 2, blockSize: 16, traceBlockSize: 64 });
  assert.equal(result.by_priority, undefined);
});
