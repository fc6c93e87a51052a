import assert from "node:assert/strict";
import { test } from "node:test";
import { PrometheusMeter } from "../observability/index.js";
import { generateSyntheticTrace } from "../traces/index.js";
import { replay } from "./replay.js";
import type { TraceRequest } from "./trace.js";

/** The sum of a metric's samples in Prometheus text, those whose labels contain `labels`. */
function metric(text: string, name: string, labels = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`armature_${name}`) || !line.includes(labels)) continue;
    const [series, value] = line.split(" ");
    if (series === `armature_${name}` || series?.startsWith(`armature_${name}{`)) sum += Number(value);
  }
  return sum;
}

test("replay routes through the real router: its overhead and prefill metrics count every request", async () => {
  const trace: TraceRequest[] = Array.from({ length: 12 }, (_, i) => ({
    timestamp: i * 200,
    inputLength: 256,
    outputLength: 8,
    hashIds: [i % 3, 100 + i],
  }));
  const options = { trace, policy: "kv", blockSize: 16, traceBlockSize: 128 } as const;
  const aggregatedMeter = new PrometheusMeter();
  const aggregated = await replay({ ...options, workers: 2, meter: aggregatedMeter });
  const text = await aggregatedMeter.render();
  assert.equal(aggregated.completed, 12);
  assert.ok(metric(text, "router_overhead_scheduling_ms_count") >= 12, "the KV policy decided every request");
  // Dynamo's prefill router is in front of every deployment; without prefill workers it steps aside.
  assert.equal(metric(text, "disagg_prefill_requests_total", 'where="local_no_prefill_worker"'), 12);

  const splitMeter = new PrometheusMeter();
  const split = await replay({ ...options, workers: 0, prefill: 1, decode: 1, meter: splitMeter });
  const splitText = await splitMeter.render();
  assert.equal(split.completed, 12);
  assert.equal(metric(splitText, "disagg_prefill_requests_total", 'where="remote"'), 12);
  assert.ok(metric(splitText, "router_overhead_scheduling_ms_count") >= 24, "a prefill and a decode decision each");
  const moved = metric(splitText, "kv_transfer_bytes_total", 'backend="file"');
  assert.ok(moved > 0 && moved <= 12 * 256 * 131072, `the handoffs moved the prompts' KV in one process (${moved} bytes)`);
});

test("a full admission queue refuses requests in replay as it does live (HTTP 503)", async () => {
  // One worker that any booking makes busy; a request every millisecond, each running ~80 ms: the
  // first runs, five wait their turn, the other 24 find the queue full.
  const trace: TraceRequest[] = Array.from({ length: 30 }, (_, i) => ({
    timestamp: i,
    inputLength: 256,
    outputLength: 10,
    hashIds: [i, 1000 + i],
  }));
  const r = await replay({
    trace,
    policy: "kv",
    workers: 1,
    blockSize: 16,
    traceBlockSize: 128,
    busy: { activeDecodeBlocks: 0.0001, queueSize: 5 },
  });
  assert.deepEqual([r.completed, r.rejected], [6, 24]);
  const roomy = await replay({ trace, policy: "kv", workers: 1, blockSize: 16, traceBlockSize: 128 });
  assert.deepEqual([roomy.completed, roomy.rejected], [30, 0], "with the default thresholds nothing waits");
});

test("the same seed gives byte-identical JSON, with disaggregation, event delays and a scaling fleet", async () => {
  const trace: TraceRequest[] = Array.from({ length: 60 }, (_, i) => ({
    timestamp: i * 37,
    inputLength: 64 * (4 + (i % 5)),
    outputLength: 5 + (i % 7),
    hashIds: [i % 4, (i % 8) + 10, 100 + i],
  }));
  const run = () =>
    replay({
      trace,
      policy: "kv",
      workers: 0,
      prefill: 2,
      decode: 2,
      blockSize: 16,
      traceBlockSize: 64,
      disaggThreshold: 100,
      kvEventDelayMs: 3,
      loadReportDelayMs: 7,
      seed: 11,
      control: async ({ fleet, clock, signal }) => {
        await clock.sleep(500, signal);
        await fleet.addWorker("prefill", { startupMs: 300 });
        await fleet.removeWorker("decode");
      },
    });
  const strip = (r: Awaited<ReturnType<typeof replay>>) => JSON.stringify({ ...r, wall_seconds: 0 });
  const a = await run();
  const b = await run();
  assert.equal(a.completed, 60);
  assert.equal(strip(a), strip(b));
});

test("KV events that arrive later cannot find more cached prefix: the hit rate falls as the delay grows", async () => {
  // Six pairs, 10 s apart. The second request of a pair shares the first's 960-token prefix and
  // comes 50…1600 ms after it, while the first is still decoding on its worker. The router sends it
  // there only if the first's KV events have reached the index (about 30 ms of prefill plus the
  // delay); otherwise the first's booked load sends it to the other worker, which caches nothing.
  const gaps = [50, 100, 200, 400, 800, 1600];
  const trace: TraceRequest[] = gaps.flatMap((gap, k) => {
    const prefix = Array.from({ length: 15 }, (_, j) => k * 100 + j);
    return [
      { timestamp: k * 10_000, inputLength: 1024, outputLength: 300, hashIds: [...prefix, k * 100 + 50] },
      { timestamp: k * 10_000 + gap, inputLength: 1024, outputLength: 20, hashIds: [...prefix, k * 100 + 60] },
    ];
  });
  const options = { trace, policy: "kv", workers: 2, blockSize: 16, traceBlockSize: 64 } as const;
  const rates: number[] = [];
  for (const kvEventDelayMs of [0, 150, 700, 100_000]) rates.push((await replay({ ...options, kvEventDelayMs })).hit_rate);
  const pairHit = 960 / (12 * 1024);
  // Hits where the gap exceeds ~30 ms of prefill plus the delay: 6, 4, 2 and 0 pairs.
  assert.deepEqual(
    rates.map((r) => Math.round(r / pairHit)),
    [6, 4, 2, 0],
    `hit rates ${rates}`,
  );
});

test("--router-temperature reaches the KV policy: above 0 it samples workers, so a shared prefix is hit less often", async () => {
  // Twenty requests a second apart sharing 7 of their 8 blocks: at temperature 0 every one after the
  // first goes to the worker that caches the prefix; at a high temperature the choice is nearly
  // uniform over 8 workers, and a request that lands on a worker without the prefix recomputes it.
  const trace: TraceRequest[] = Array.from({ length: 20 }, (_, i) => ({
    timestamp: i * 1000,
    inputLength: 1024,
    outputLength: 4,
    hashIds: [1, 2, 3, 4, 5, 6, 7, 100 + i],
  }));
  const options = { trace, policy: "kv", workers: 8, blockSize: 16, traceBlockSize: 128 } as const;
  const greedy = await replay(options);
  const sampled = await replay({ ...options, routerTemperature: 1000 });
  // 19 of 20 requests reuse 896 of 1,024 tokens: 19 × 896 / 20,480.
  assert.equal(greedy.hit_rate, (19 * 896) / (20 * 1024));
  assert.ok(sampled.hit_rate < greedy.hit_rate, `${sampled.hit_rate} against ${greedy.hit_rate}`);
});

test("the exclusive factor reaches the KV policy: at its default, more turns stay on the worker that alone holds their conversation", async () => {
  // Two minutes at 2 requests a second, 4 workers, four in five requests continuing a conversation:
  // at factor 1 (Dynamo's cost) a worker's decode load sends turns away from their conversation,
  // which is then recomputed elsewhere.
  const trace = generateSyntheticTrace({
    shape: { kind: "step", steps: [{ atSeconds: 0, rps: 2 }] },
    durationSeconds: 120,
    seed: 3,
    inputMeanTokens: 4000,
    outputMeanTokens: 200,
    multiTurnShare: 0.8,
  });
  const options = { trace, policy: "kv", workers: 4 } as const;
  const dynamo = await replay({ ...options, exclusiveFactor: 1 });
  const byDefault = await replay(options);
  assert.ok(byDefault.hit_rate > dynamo.hit_rate + 0.01, `${byDefault.hit_rate} against ${dynamo.hit_rate}`);
});
