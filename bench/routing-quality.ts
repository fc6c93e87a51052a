// Routing quality: the Mooncake conversation trace replayed in virtual time through each policy,
// at three arrival-rate multipliers, for one worker count (and, given several overlap weights, each
// of them in turn). Prints a markdown table and the unlimited-shared-cache hit-rate bound.
// ARMATURE_TRACE names another Mooncake trace.
// Usage: node --import tsx bench/routing-quality.ts WORKERS [SPEEDUPS] [--host-kv-blocks N] [--kv-overlap-weight W[,W…]]
//        [--policies kv,round-robin,random,least-loaded] [--limit N (the first N requests)]
import { parseArgs } from "node:util";
import { DEFAULT_OVERLAP_WEIGHT } from "../src/router/index.js";
import { loadTrace, type ReplayPolicy, type ReplayResult, replay, sharedCacheHitBound } from "../src/sim/index.js";
import { machine } from "./load/processes.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    "host-kv-blocks": { type: "string", default: "0" },
    "kv-overlap-weight": { type: "string", default: String(DEFAULT_OVERLAP_WEIGHT) },
    policies: { type: "string", default: "kv,round-robin,random,least-loaded" },
    limit: { type: "string" },
  },
});
const workers = Number(positionals[0] ?? 16);
const speedups = (positionals[1] ?? "1,2,4").split(",").map(Number);
const hostKvBlocks = Number(values["host-kv-blocks"]);
const overlapWeights = (values["kv-overlap-weight"] as string).split(",").map(Number);
const policies = (values.policies as string).split(",") as ReplayPolicy[];
const tracePath = process.env.ARMATURE_TRACE ?? "../shared/research/data/mooncake/conversation_trace.jsonl";
const trace = (await loadTrace(tracePath)).slice(0, values.limit ? Number(values.limit) : undefined);
const bound = sharedCacheHitBound(trace, 512, 64);
console.log(
  `routing quality — ${machine()} — ${trace.length} requests, ${workers} workers, block 64, 16384 blocks/worker, ${hostKvBlocks} host blocks/worker, kv overlap weight ${overlapWeights.join(", ")}`,
);
console.log(`unlimited shared cache hit-rate bound: ${(100 * bound).toFixed(1)}%\n`);
console.log(
  "| workers | speedup | overlap weight | policy | hit rate (% of bound) | TTFT mean / p99 ms | ITL mean / p99 ms | wall s |",
);
console.log("|---:|---:|---:|---|---:|---:|---:|---:|");
for (const speedup of speedups)
  for (const overlapWeight of overlapWeights) {
    const results: ReplayResult[] = [];
    for (const policy of policies) {
      const r = await replay({ trace, policy, workers, speedup, seed: 1, hostKvBlocks, overlapWeight });
      results.push(r);
      console.log(
        `| ${workers} | ${speedup} | ${overlapWeight} | ${policy} | ${(100 * r.hit_rate).toFixed(1)}% (${((100 * r.hit_rate) / bound).toFixed(1)}%)${hostKvBlocks > 0 ? `, host ${(100 * r.host_hit_rate).toFixed(1)}%` : ""} | ${r.ttft_ms.mean.toFixed(0)} / ${r.ttft_ms.p99.toFixed(0)} | ${r.itl_ms.mean.toFixed(1)} / ${r.itl_ms.p99.toFixed(1)} | ${r.wall_seconds.toFixed(0)} |`,
      );
    }
    if (results.length < 2 || policies[0] !== "kv") continue;
    const [kv, ...others] = results as [ReplayResult, ...ReplayResult[]];
    const beatsMean = others.every((o) => kv.ttft_ms.mean < o.ttft_ms.mean);
    const beatsP99 = others.every((o) => kv.ttft_ms.p99 < o.ttft_ms.p99);
    console.log(
      `|  |  |  | **kv beats all on mean TTFT: ${beatsMean ? "yes" : "no"}; on p99: ${beatsP99 ? "yes" : "no"}** |  |  |  |  |`,
    );
  }
