// Frontend capacity: armature (mocker engine at a very high speedup, so the engine costs ~nothing)
// against two bare node:http servers, at 1, 64 and 512 concurrent streams: the streaming baseline
// (bench/streaming-bare-server.ts: parses the body, writes each SSE event one event-loop turn apart,
// as any relay of a token-by-token engine must) and the ceiling (bench/bare-server.ts: one fixed
// body in one write). Two load generators drive each: `armature bench`'s (src/bench; tokens counted
// from usage, first-token latency) and Debian's `wrk` (the calibration: a Node client caps a fast
// server). Each generator's CPU is reported, and each server's own CPU per streamed token over the
// wrk run. Then scale-out: `armature frontend --frontend-processes N` over NATS and etcd with one
// mocker worker, N = 1 and 2, under wrk. Between the two, paired rounds: armature and the
// streaming baseline both up, wrk alternating between them, the median of the rounds' ratios; while
// wrk holds its streams, a probe sends one more request at a time and times its first token, so the
// first-token latency a new request meets on a loaded server is measured with wrk as the load (the
// probe is one stream, its client nearly idle).
// Needs `wrk` (apt-get install wrk).
// Usage: npm run bench:frontend [-- seconds-per-run]
import { Agent } from "node:http";
import { type BenchOptions, streamCompletion } from "../src/bench/index.js";
import { summarize } from "../src/sim/index.js";
import { startEtcd } from "../test/helpers/etcd-server.js";
import { startNatsServer } from "../test/helpers/nats-server.js";
import { loadInChild, machine, type Served, spawnFastMockerServe, spawnServer } from "./load/processes.js";
import { runWrk } from "./load/wrk.js";

const seconds = Number(process.argv[2] ?? 10);
const TOKENS = 16;
const levels = [1, 64, 512];
const body = { model: "armature-mocker", prompt: "hello", max_tokens: TOKENS, stream: true };
const load = (url: string, concurrency: number, limit: { requests: number } | { durationMs: number }): BenchOptions => ({
  url,
  model: "armature-mocker",
  promptText: "hello",
  outputTokens: TOKENS,
  mode: { kind: "concurrency", concurrency, requests: 1e9, ...limit },
});
const pct = (share: number): string => `${(100 * share).toFixed(0)}%`;
const servers = {
  ceiling: () => spawnServer(["bench/bare-server.ts", String(TOKENS)]),
  streaming: () => spawnServer(["bench/streaming-bare-server.ts"]),
  // Sequences for every stream: the engine is not what is measured (its default 256 would hold
  // half of 512 streams at the router while the bare servers take them all).
  armature: () => spawnFastMockerServe(["--sequences", String(Math.max(...levels))]),
};
type Kind = keyof typeof servers;

console.log(`frontend capacity — ${machine()} — ${seconds}s per run, ${TOKENS} tokens per stream\n`);
console.log(
  "| streams | server | armature bench: req/s | tokens/s | first token p50 / p99 ms | its CPU | wrk: req/s | latency p50 / p99 ms | its CPU | server CPU per token (µs) | failed |",
);
console.log("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
const rows: Record<string, { rps: number; wrkRps: number; p99: number; cpuPerToken: number }> = {};
for (const concurrency of levels) {
  for (const kind of Object.keys(servers) as Kind[]) {
    const server = await servers[kind]();
    try {
      await loadInChild(load(server.url, concurrency, { requests: concurrency * 4 })); // warm-up
      const r = await loadInChild(load(server.url, concurrency, { durationMs: seconds * 1000 }));
      const cpuBefore = server.cpuSeconds();
      const w = await runWrk(
        server.url,
        "/v1/completions",
        { ...body, stream_options: { include_usage: true } },
        concurrency,
        seconds,
      );
      // Every stream here carries TOKENS tokens (the generator above checks each stream's usage).
      const cpuPerToken = (server.cpuSeconds() - cpuBefore) / (w.requests * TOKENS);
      rows[`${kind}-${concurrency}`] = { rps: r.requests_per_s, wrkRps: w.requestsPerSecond, p99: r.ttft_ms.p99, cpuPerToken };
      console.log(
        `| ${concurrency} | ${kind} | ${r.requests_per_s.toFixed(0)} | ${r.throughput_tok_s.toFixed(0)} | ${r.ttft_ms.p50.toFixed(2)} / ${r.ttft_ms.p99.toFixed(2)} | ${pct(r.generator_cpu)} | ${w.requestsPerSecond.toFixed(0)} | ${w.latencyMs.p50.toFixed(2)} / ${w.latencyMs.p99.toFixed(2)} | ${pct(w.generatorCpu)} | ${(cpuPerToken * 1e6).toFixed(1)} | ${r.failed + w.failed} |`,
      );
    } finally {
      await server.stop();
    }
  }
}
console.log(
  "\n| streams | armature / streaming bare request rate (wrk) | (armature bench) | armature / ceiling (wrk) | added first-token p99 over streaming bare (ms) | server CPU per token, armature / streaming bare |",
);
console.log("|---:|---:|---:|---:|---:|---:|");
for (const c of levels) {
  const a = rows[`armature-${c}`];
  const s = rows[`streaming-${c}`];
  const b = rows[`ceiling-${c}`];
  if (a && s && b) {
    console.log(
      `| ${c} | ${((100 * a.wrkRps) / s.wrkRps).toFixed(1)}% | ${((100 * a.rps) / s.rps).toFixed(1)}% | ${((100 * a.wrkRps) / b.wrkRps).toFixed(1)}% | ${(a.p99 - s.p99).toFixed(2)} | ${(a.cpuPerToken / s.cpuPerToken).toFixed(2)}× |`,
    );
  }
}

// Paired rounds: one run per server above moves with the machine's luck (a baseline's rate has
// moved by half between runs). Here both servers stay up and wrk alternates between them, the
// order flipped every round; the ratio of each round's pair, and their median.
const ROUNDS = 5;
const ROUND_SECONDS = 5;
console.log(`\npaired rounds under wrk: ${ROUNDS} rounds of ${ROUND_SECONDS} s on each server, alternating\n`);
console.log(
  "| streams | armature / streaming bare, each round | median | server CPU per token, armature / streaming bare, each round | median |",
);
console.log("|---:|---|---:|---|---:|");
const median = (xs: readonly number[]): number => summarize(xs).p50;
type Round = { readonly rps: number; readonly cpuPerToken: number; readonly probeTtftMs: number[] };

/** Streamed requests one at a time until `done`, each one's time to its first token (ms). */
async function probeFirstTokens(url: string, done: () => boolean): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const ttfts: number[] = [];
  try {
    while (!done()) {
      const t = await streamCompletion(url, body, agent);
      if (!t.ok || t.completionTokens !== TOKENS) throw new Error(`a probe stream did not complete: ${t.error}`);
      ttfts.push(t.ttftMs);
    }
  } finally {
    agent.destroy();
  }
  return ttfts;
}
const paired = { streaming: await servers.streaming(), armature: await servers.armature() };
const probeRows: string[] = [];
try {
  for (const c of [64, 512]) {
    const usage = { ...body, stream_options: { include_usage: true } };
    const round = async (server: Served): Promise<Round> => {
      const cpuBefore = server.cpuSeconds();
      let finished = false;
      const wrk = runWrk(server.url, "/v1/completions", usage, c, ROUND_SECONDS).finally(() => {
        finished = true;
      });
      // The probe starts once wrk's connections are up; its tokens count with wrk's in the CPU per token.
      await new Promise((r) => setTimeout(r, 500));
      const probe = probeFirstTokens(server.url, () => finished);
      const [w, probeTtftMs] = await Promise.all([wrk, probe]);
      const tokens = (w.requests + probeTtftMs.length) * TOKENS;
      return { rps: w.requestsPerSecond, cpuPerToken: (server.cpuSeconds() - cpuBefore) / tokens, probeTtftMs };
    };
    for (const server of Object.values(paired)) await runWrk(server.url, "/v1/completions", usage, c, 2); // warm-up
    const rates: number[] = [];
    const cpu: number[] = [];
    const probes = { streaming: [] as number[], armature: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      const order = i % 2 === 0 ? (["streaming", "armature"] as const) : (["armature", "streaming"] as const);
      const got = new Map<string, Round>();
      for (const kind of order) got.set(kind, await round(paired[kind]));
      const [s, b] = [got.get("streaming"), got.get("armature")] as [Round, Round];
      rates.push(b.rps / s.rps);
      cpu.push(b.cpuPerToken / s.cpuPerToken);
      probes.streaming.push(...s.probeTtftMs);
      probes.armature.push(...b.probeTtftMs);
    }
    // The same percentiles as the load generator's first-token figures (`summarize`).
    const [ps, pa] = [summarize(probes.streaming), summarize(probes.armature)];
    probeRows.push(
      `| ${c} | ${probes.streaming.length} / ${probes.armature.length} | ${ps.p50.toFixed(2)} / ${ps.p99.toFixed(2)} | ${pa.p50.toFixed(2)} / ${pa.p99.toFixed(2)} | ${(pa.p99 - ps.p99).toFixed(2)} |`,
    );
    console.log(
      `| ${c} | ${rates.map((r) => `${(100 * r).toFixed(1)}%`).join(" ")} | ${(100 * median(rates)).toFixed(1)}% | ${cpu.map((r) => `${r.toFixed(2)}×`).join(" ")} | ${median(cpu).toFixed(2)}× |`,
    );
  }
  console.log("\nfirst token of one more request while wrk holds the streams (the probe, all rounds pooled)\n");
  console.log(
    "| wrk streams | probes, streaming bare / armature | streaming bare p50 / p99 ms | armature p50 / p99 ms | added first-token p99 (ms) |",
  );
  console.log("|---:|---:|---:|---:|---:|");
  for (const row of probeRows) console.log(row);
} finally {
  await Promise.all(Object.values(paired).map((server) => server.stop()));
}

console.log("\nscale-out: armature frontend --frontend-processes N, one mocker worker, NATS + etcd, wrk\n");
console.log("| frontend processes | connections | req/s | latency p50 / p99 ms | wrk CPU | failed |");
console.log("|---:|---:|---:|---:|---:|---:|");
const nats = await startNatsServer();
const etcd = await startEtcd();
const cluster = ["--bus", nats.url, "--discovery", `etcd://${etcd.endpoint}`, "--log-level", "warn"];
const engine = ["--engine", "mocker", "--speedup-ratio", "1000000"];
const worker = await spawnServer(["bin/armature.js", "worker", ...cluster, ...engine], /armature worker (\S+)/);
try {
  for (const processes of [1, 2]) {
    const frontend: Served = await spawnServer([
      "bin/armature.js",
      "frontend",
      ...cluster,
      "--port",
      "0",
      "--frontend-processes",
      String(processes),
    ]);
    try {
      for (const connections of [64, 512]) {
        await runWrk(frontend.url, "/v1/completions", body, connections, 2); // warm-up
        const w = await runWrk(frontend.url, "/v1/completions", body, connections, seconds);
        console.log(
          `| ${processes} | ${connections} | ${w.requestsPerSecond.toFixed(0)} | ${w.latencyMs.p50.toFixed(2)} / ${w.latencyMs.p99.toFixed(2)} | ${pct(w.generatorCpu)} | ${w.failed} |`,
        );
      }
    } finally {
      await frontend.stop();
    }
  }
} finally {
  await worker.stop();
  await etcd.stop();
  await nats.stop();
}
