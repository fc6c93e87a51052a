// Goodput of disaggregated against aggregated deployments of equal size, in replay (mocker, virtual
// time), across a load sweep: requests per second that meet both a TTFT and an ITL target.
// Usage: node --import tsx bench/disaggregation-goodput.ts [requests] [chart.svg]
import { writeFile } from "node:fs/promises";
import { renderLineChart } from "../src/charts/index.js";
import { loadTrace, type ReplayOptions, type ReplayResult, replay } from "../src/sim/index.js";
import { machine } from "./load/processes.js";

const limit = Number(process.argv[2] ?? 2000);
const chartPath = process.argv[3] ?? "docs/charts/disaggregation-goodput.svg";
const trace = (await loadTrace("../shared/research/data/mooncake/conversation_trace.jsonl")).slice(0, limit);
const slo = { ttftMs: 2000, itlMs: 15 };
const workers = 8;
const speedups = [0.5, 1, 2, 3];
const deployments: { name: string; options: Partial<ReplayOptions> & { workers: number } }[] = [
  { name: "aggregated 8", options: { workers } },
  { name: "disaggregated 2+6", options: { workers: 0, prefill: 2, decode: 6 } },
  { name: "disaggregated 3+5", options: { workers: 0, prefill: 3, decode: 5 } },
  { name: "disaggregated 4+4", options: { workers: 0, prefill: 4, decode: 4 } },
  {
    name: "3+5 conditional",
    options: { workers: 0, prefill: 3, decode: 5, disaggThreshold: 1024, maxPrefillQueue: 4 },
  },
  // The same split over an RDMA-class link instead of this host's TCP (~2 GB/s).
  { name: "4+4 over 50 GB/s", options: { workers: 0, prefill: 4, decode: 4, transfer: { alphaMs: 0.05, bytesPerMs: 50e6 } } },
  {
    name: "4+4 conditional over 50 GB/s",
    options: {
      workers: 0,
      prefill: 4,
      decode: 4,
      disaggThreshold: 1024,
      maxPrefillQueue: 4,
      transfer: { alphaMs: 0.05, bytesPerMs: 50e6 },
    },
  },
];

console.log(`disaggregation goodput — ${machine()}`);
console.log(
  `${trace.length} requests of conversation_trace.jsonl, kv routing, SLO TTFT ≤ ${slo.ttftMs} ms and ITL ≤ ${slo.itlMs} ms\n`,
);
console.log(
  "| arrivals × | deployment | goodput req/s | SLO met | TTFT p50 / p99 ms | ITL p50 / p99 ms | local prefills | wall s |",
);
console.log("|---:|---|---:|---:|---:|---:|---:|---:|");
const goodput = new Map<string, number[]>();
for (const speedup of speedups) {
  for (const d of deployments) {
    const r: ReplayResult = await replay({ trace, policy: "kv", speedup, slo, seed: 1, ...d.options });
    const met = (r.goodput_req_s * r.sim_seconds) / r.requests;
    goodput.set(d.name, [...(goodput.get(d.name) ?? []), r.goodput_req_s]);
    console.log(
      `| ${speedup} | ${d.name} | ${r.goodput_req_s.toFixed(2)} | ${(100 * met).toFixed(0)}% | ${r.ttft_ms.p50.toFixed(0)} / ${r.ttft_ms.p99.toFixed(0)} | ${r.itl_ms.p50.toFixed(1)} / ${r.itl_ms.p99.toFixed(1)} | ${r.local_prefills ?? ""} | ${r.wall_seconds.toFixed(1)} |`,
    );
  }
}
const svg = renderLineChart(
  `Goodput, ${workers} workers, ${trace.length} conversation requests (TTFT ≤ ${slo.ttftMs} ms, ITL ≤ ${slo.itlMs} ms)`,
  speedups,
  [...goodput].map(([name, y]) => ({ name, y })),
  { x: "arrival rate multiplier", y: "goodput (requests/s meeting both targets)" },
);
await writeFile(chartPath, svg);
console.log(`\nchart: ${chartPath}`);
