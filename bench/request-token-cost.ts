// What a streamed request costs the server, split into its part per request and its part per
// token: armature (`serve --engine mocker --speedup-ratio 1000000`) and the streaming bare server,
// each under wrk at 64 connections with `max_tokens` 1, 16 and 64; the server's CPU time (from
// /proc) per request served, and what each token added between 1 and 16 tokens and between 16 and
// 64 (the slopes; where they differ the cost is not linear in the tokens). Needs `wrk`.
// Usage: node --import tsx bench/request-token-cost.ts [seconds-per-run]
import { machine, type Served, spawnFastMockerServe, spawnServer } from "./load/processes.js";
import { runWrk } from "./load/wrk.js";

const seconds = Number(process.argv[2] ?? 6);
const CONNECTIONS = 64;
const tokenCounts = [1, 16, 64];
const servers: Record<string, () => Promise<Served>> = {
  "streaming bare": () => spawnServer(["bench/streaming-bare-server.ts"]),
  armature: () => spawnFastMockerServe(),
};

/** CPU per token between consecutive (tokens, CPU per request) points. */
const slopes = (points: readonly (readonly [number, number])[]): number[] =>
  points.slice(1).map(([x, y], i) => (y - (points[i] as [number, number])[1]) / (x - (points[i] as [number, number])[0]));

console.log(`CPU per streamed request — ${machine()} — wrk, ${CONNECTIONS} connections, ${seconds}s per run\n`);
console.log("| server | max_tokens | req/s | server CPU per request (µs) |");
console.log("|---|---:|---:|---:|");
const lines: string[] = [];
for (const [name, start] of Object.entries(servers)) {
  const server = await start();
  try {
    const points: [number, number][] = [];
    for (const tokens of tokenCounts) {
      const body = {
        model: "armature-mocker",
        prompt: "hello",
        max_tokens: tokens,
        stream: true,
        stream_options: { include_usage: true },
      };
      await runWrk(server.url, "/v1/completions", body, CONNECTIONS, 2); // warm-up
      const before = server.cpuSeconds();
      const w = await runWrk(server.url, "/v1/completions", body, CONNECTIONS, seconds);
      const perRequestUs = ((server.cpuSeconds() - before) / w.requests) * 1e6;
      points.push([tokens, perRequestUs]);
      console.log(`| ${name} | ${tokens} | ${w.requestsPerSecond.toFixed(0)} | ${perRequestUs.toFixed(1)} |`);
    }
    const [short, long] = slopes(points);
    const fixed = (points[0] as [number, number])[1] - (short as number);
    lines.push(`| ${name} | ${fixed.toFixed(0)} | ${(short as number).toFixed(1)} | ${(long as number).toFixed(1)} |`);
  } finally {
    await server.stop();
  }
}
console.log(
  "\n| server | CPU per request without its tokens (µs) | per token, 1 → 16 tokens (µs) | per token, 16 → 64 tokens (µs) |\n|---|---:|---:|---:|",
);
for (const line of lines) console.log(line);
