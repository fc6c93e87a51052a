// KV hit rate of vLLM engines behind armature: routed from their own KV events (ZMQ) against the
// approximate index (what armature sent where, as for engines that publish none), on the Mooncake
// conversation trace, against the hit rate an unlimited cache shared by all workers would reach.
// The engines are the vLLM test double (test/helpers/fake-engine-server.ts: a prefix cache of
// `capacity` blocks with LRU eviction, its stores and evictions published as vLLM does), since no
// vLLM runs here; what is measured is armature's routing, with the engine's cache as the double
// keeps it. Trace blocks of 512 tokens are scaled to the engines' 16 (every length × 1/32), and
// completions cut to 8 tokens, so a run takes seconds; prompts are token ids from the hash ids
// (`armature bench --trace`'s synthesis: equal ids, equal blocks).
// Usage: node --import tsx bench/engine-events-hit-rate.ts [REQUESTS=800] [WORKERS=4] [CAPACITY=1024] [SPEEDUP=20]
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runBench } from "../src/bench/index.js";
import { ensureTinyModel, loadTokenizer } from "../src/engines/index.js";
import { loadTrace, sharedCacheHitBound, type TraceRequest } from "../src/sim/index.js";
import { startServe } from "../test/helpers/armature-process.js";
import { type FakeVllm, startFakeVllm } from "../test/helpers/fake-engine-server.js";
import { machine } from "./load/processes.js";

const [REQUESTS, WORKERS, CAPACITY, SPEEDUP] = [800, 4, 1024, 20].map((d, i) => Number(process.argv[i + 2] ?? d)) as [
  number,
  number,
  number,
  number,
];
const TRACE = new URL("../../shared/research/data/mooncake/conversation_trace.jsonl", import.meta.url).pathname;
const TRACE_BLOCK = 512;
const BLOCK = 16;

const scaled: TraceRequest[] = (await loadTrace(TRACE)).slice(0, REQUESTS).map((r) => ({
  ...r,
  inputLength: Math.max(1, Math.ceil((r.inputLength * BLOCK) / TRACE_BLOCK)),
  outputLength: Math.min(r.outputLength, 8),
}));
const model = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-bench-")));
const tokenizer = await loadTokenizer({ kind: "gguf", path: model });
const tokenize = (text: string) => tokenizer.encode(text, { special: true });
const bound = sharedCacheHitBound(scaled, BLOCK, BLOCK);
const span = ((scaled.at(-1)?.timestamp ?? 0) - (scaled[0]?.timestamp ?? 0)) / 1000;
console.log(
  `${machine()}; the first ${REQUESTS} requests of the conversation trace (${span.toFixed(0)} s, replayed ${SPEEDUP}× faster), ${WORKERS} vLLM doubles of ${CAPACITY} blocks each\n`,
);
console.log("| routing | hit rate | of the shared-cache bound | TTFT p50 ms | failed |");
console.log("|---|---:|---:|---:|---:|");
for (const events of [true, false]) {
  const engines: FakeVllm[] = [];
  for (let i = 0; i < WORKERS; i++) engines.push(await startFakeVllm({ tokenize, capacityBlocks: CAPACITY }));
  const args = ["--engine", "vllm", "--model", model, "--log-level", "warn"];
  for (const e of engines) {
    args.push("--engine-url", e.url);
    if (events) args.push("--kv-events-endpoint", e.eventsEndpoint, "--kv-events-replay-endpoint", e.replayEndpoint);
  }
  const server = await startServe(args);
  try {
    const report = await runBench({
      url: server.url,
      model: "armature-tiny-v2",
      mode: { kind: "trace", trace: scaled, speedup: SPEEDUP, traceBlockSize: BLOCK },
    });
    const name = events ? "vLLM's KV events (ZMQ)" : "approximate index (no events)";
    console.log(
      `| ${name} | ${report.hit_rate.toFixed(3)} | ${((100 * report.hit_rate) / bound).toFixed(1)}% | ${report.ttft_ms.p50.toFixed(1)} | ${report.failed} |`,
    );
  } finally {
    await server.stop("SIGTERM");
    await Promise.all(engines.map((e) => e.close()));
  }
}
console.log(`\nshared-cache bound (unlimited, every worker's blocks shared): ${bound.toFixed(3)}`);
