// Routing quality: the Mooncake conversation trace replayed in virtual time through each policy,
// at three arrival-rate multipliers, for one worker count. Prints a markdown table and the
// unlimited-shared-cache hit-rate bound. Usage: node --import tsx bench/routing-quality.ts WORKERS [SPEEDUPS]
import { loadTrace, type ReplayResult, replay, sharedCacheHitBound } from "../src/sim/index.js";
import { machine } from "./load/processes.js";

const workers = Number(process.argv[2] ?? 16);
const speedups = (process.argv[3] ?? "1,2,4").split(",").map(Number);
const tracePath = process.env.ARMATURE_TRACE ?? "../shared/research/data/mooncake/conversation_trace.jsonl";
const trace = await loadTrace(tracePath);
const bound = sharedCacheHitBound(trace, 512, 64);
console.log(`routing quality — ${machine()} — ${trace.length} requests, ${workers} workers, block 64, 16384 blocks/worker`);
console.log(`unlimited shared cache hit-rate bound: ${(100 * bound).toFixed(1)}%\n`);
console.log("| workers | speedup | policy | hit rate (% of bound) | TTFT mean / p99 ms | ITL mean / p99 ms | wall s |");
console.log("|---:|---:|---|---:|---:|---:|---:|");
for (const speedup of speedups) {
  const results: ReplayResult[] = [];
  for (const policy of ["kv", "round-robin", "random", "least-loaded"] as const) {
    const r = await replay({ trace, policy, workers, speedup, seed: 1 });
    results.push(r);
    console.log(
      `| ${workers} | ${speedup} | ${policy} | ${(100 * r.hit_rate).toFixed(1)}% (${((100 * r.hit_rate) / bound).toFixed(0)}%) | ${r.ttft_ms.mean.toFixed(0)} / ${r.ttft_ms.p99.toFixed(0)} | ${r.itl_ms.mean.toFixed(1)} / ${r.itl_ms.p99.toFixed(1)} | ${r.wall_seconds.toFixed(0)} |`,
    );
  }
  const [kv, ...others] = results as [ReplayResult, ...ReplayResult[]];
  const beatsMean = others.every((o) => kv.ttft_ms.mean < o.ttft_ms.mean);
  const beatsP99 = others.every((o) => kv.ttft_ms.p99 < o.ttft_ms.p99);
  console.log(
    `|  |  | **kv beats all on mean TTFT: ${beatsMean ? "yes" : "no"}; on p99: ${beatsP99 ? "yes" : "no"}** |  |  |  |  |`,
  );
}
