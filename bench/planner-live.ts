// The load planner live: `armature serve --engine mocker --planner load --max-workers 4` with
// targets of 500 ms TTFT and 30 ms ITL, under 128 streaming clients each sending 4,000-character
// prompts for 300 tokens, in a loop, for 45 s. Every 5 s: requests finished, the pool's size and
// the last decision's reason; at the end, TTFT percentiles and the median token gap.
// Usage: node --import tsx bench/planner-live.ts [SECONDS]
import { machine, spawnServer } from "./load/processes.js";

const seconds = Number(process.argv[2] ?? 45);
const CLIENTS = 128;
const served = await spawnServer([
  "bin/armature.js",
  "serve",
  "--engine",
  "mocker",
  "--planner",
  "load",
  "--min-workers",
  "1",
  "--max-workers",
  "4",
  "--slo-ttft",
  "500",
  "--slo-itl",
  "30",
  "--port",
  "0",
  "--log-level",
  "warn",
]);
console.log(`Load planner live — ${machine()} — ${CLIENTS} streaming clients, 4,000-character prompts, 300 tokens\n`);
const end = Date.now() + seconds * 1000;
const ttfts: number[] = [];
const gaps: number[] = [];
let done = 0;

async function client(i: number): Promise<void> {
  for (let n = 0; Date.now() < end; n++) {
    const prompt = `client ${i} request ${n} ${"lorem ipsum dolor sit amet ".repeat(150)}`.slice(0, 4000);
    const started = performance.now();
    const response = await fetch(`${served.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "armature-mocker", prompt, max_tokens: 300, stream: true, ignore_eos: true }),
    });
    let last = 0;
    for await (const _ of response.body ?? []) {
      const now = performance.now();
      if (last === 0) ttfts.push(now - started);
      else gaps.push(now - last);
      last = now;
    }
    done++;
  }
}

interface PlannerState {
  pools: { aggregated?: { desired: number; ready: number } };
  decisions: { reason: string }[];
}
const startedAt = Date.now();
const report = setInterval(async () => {
  const state = (await (await fetch(`${served.url}/v1/planner`)).json()) as PlannerState;
  const pool = state.pools.aggregated;
  console.log(
    `${((Date.now() - startedAt) / 1000).toFixed(0).padStart(3)} s: ${String(done).padStart(4)} requests done, workers ${pool?.ready}/${pool?.desired} (ready/desired); last decision: ${state.decisions.at(-1)?.reason ?? "none"}`,
  );
}, 5000);
await Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i)));
clearInterval(report);
await served.stop();
const quantile = (values: number[], q: number) =>
  values.sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))] ?? 0;
console.log(
  `\n${done} requests in ${seconds} s; TTFT p50 ${quantile(ttfts, 0.5).toFixed(0)} ms, p90 ${quantile(ttfts, 0.9).toFixed(0)} ms; token gap p50 ${quantile(gaps, 0.5).toFixed(1)} ms`,
);
