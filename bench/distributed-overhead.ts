// What the distributed planes add: the same mocker worker (engine time ~0) and frontend, once in
// one process (`armature serve`) and once as two processes over NATS and etcd, under the same load
// generator. Usage: node --import tsx bench/distributed-overhead.ts [seconds-per-run]
import type { BenchOptions } from "../src/bench/index.js";
import { startEtcd } from "../test/helpers/etcd-server.js";
import { startNatsServer } from "../test/helpers/nats-server.js";
import { loadInChild, machine, spawnFastMockerServe, spawnServer } from "./load/processes.js";

const seconds = Number(process.argv[2] ?? 10);
const TOKENS = 16;
const load = (url: string, concurrency: number, limit: { requests: number } | { durationMs: number }): BenchOptions => ({
  url,
  model: "armature-mocker",
  promptText: "hello",
  outputTokens: TOKENS,
  mode: { kind: "concurrency", concurrency, requests: 1e9, ...limit },
});
const engine = ["--engine", "mocker", "--speedup-ratio", "1000000", "--log-level", "warn", "--router", "round-robin"];

console.log(`distributed overhead — ${machine()} — ${seconds}s per run, ${TOKENS} tokens per stream\n`);
console.log("| streams | deployment | req/s | tokens/s | first token p50 / p99 ms | per-token p50 ms | failed |");
console.log("|---:|---|---:|---:|---:|---:|---:|");
const nats = await startNatsServer();
const etcd = await startEtcd();
const cluster = ["--bus", nats.url, "--discovery", `etcd://${etcd.endpoint}`];
try {
  for (const concurrency of [1, 16, 64]) {
    for (const kind of ["embedded", "nats+etcd"] as const) {
      const processes =
        kind === "embedded"
          ? [await spawnFastMockerServe(["--router", "round-robin"])]
          : [
              await spawnServer(["bin/armature.js", "worker", ...cluster, ...engine], /armature worker (\S+)/),
              await spawnServer([
                "bin/armature.js",
                "frontend",
                ...cluster,
                "--port",
                "0",
                "--log-level",
                "warn",
                "--router",
                "round-robin",
              ]),
            ];
      const frontend = processes.at(-1);
      if (!frontend) throw new Error("no frontend");
      try {
        await loadInChild(load(frontend.url, concurrency, { requests: 50 }));
        const r = await loadInChild(load(frontend.url, concurrency, { durationMs: seconds * 1000 }));
        const perToken = (r.latency_ms.p50 - r.ttft_ms.p50) / (TOKENS - 1);
        console.log(
          `| ${concurrency} | ${kind} | ${r.requests_per_s.toFixed(0)} | ${r.throughput_tok_s.toFixed(0)} | ${r.ttft_ms.p50.toFixed(2)} / ${r.ttft_ms.p99.toFixed(2)} | ${perToken.toFixed(3)} | ${r.failed} |`,
        );
      } finally {
        for (const p of processes.reverse()) await p.stop();
      }
    }
  }
} finally {
  await nats.stop();
  await etcd.stop();
}
