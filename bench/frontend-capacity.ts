// Frontend capacity: armature (mocker engine at a very high speedup, so the engine costs ~nothing)
// against a bare node:http server answering a fixed SSE body, under the same load generator, at
// 1, 64 and 512 concurrent streams. The load is `armature bench`'s (src/bench), in its own process;
// tokens are counted from each stream's usage. Usage: npm run bench:frontend [-- seconds-per-run]
import type { BenchOptions } from "../src/bench/index.js";
import { loadInChild, machine, spawnFastMockerServe, spawnServer } from "./load/processes.js";

const seconds = Number(process.argv[2] ?? 10);
const TOKENS = 16;
const levels = [1, 64, 512];
const load = (url: string, concurrency: number, limit: { requests: number } | { durationMs: number }): BenchOptions => ({
  url,
  model: "armature-mocker",
  promptText: "hello",
  outputTokens: TOKENS,
  mode: { kind: "concurrency", concurrency, requests: 1e9, ...limit },
});

console.log(`frontend capacity — ${machine()} — ${seconds}s per run, ${TOKENS} tokens per stream\n`);
console.log("| streams | server | req/s | streamed tokens/s | first token p50 / p99 ms | latency p50 / p99 ms | failed |");
console.log("|---:|---|---:|---:|---:|---:|---:|");
const rows: Record<string, { rps: number; p99: number }> = {};
for (const concurrency of levels) {
  for (const kind of ["bare", "armature"] as const) {
    const server = kind === "bare" ? await spawnServer(["bench/bare-server.ts", String(TOKENS)]) : await spawnFastMockerServe();
    try {
      await loadInChild(load(server.url, concurrency, { requests: concurrency * 4 })); // warm-up
      const r = await loadInChild(load(server.url, concurrency, { durationMs: seconds * 1000 }));
      rows[`${kind}-${concurrency}`] = { rps: r.requests_per_s, p99: r.ttft_ms.p99 };
      console.log(
        `| ${concurrency} | ${kind} | ${r.requests_per_s.toFixed(0)} | ${r.throughput_tok_s.toFixed(0)} | ${r.ttft_ms.p50.toFixed(2)} / ${r.ttft_ms.p99.toFixed(2)} | ${r.latency_ms.p50.toFixed(2)} / ${r.latency_ms.p99.toFixed(2)} | ${r.failed} |`,
      );
    } finally {
      await server.stop();
    }
  }
}
console.log("\n| streams | armature / bare request rate | added first-token p99 (ms) |");
console.log("|---:|---:|---:|");
for (const c of levels) {
  const a = rows[`armature-${c}`];
  const b = rows[`bare-${c}`];
  if (a && b) console.log(`| ${c} | ${((100 * a.rps) / b.rps).toFixed(1)}% | ${(a.p99 - b.p99).toFixed(2)} |`);
}
