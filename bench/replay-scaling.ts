// Replay speed as the fleet grows: one synthetic 100k-request trace (Poisson arrivals at 100 req/s,
// 1–4 blocks of 512 prompt tokens with shared session prefixes, 16–64 output tokens) through the kv
// policy with 64, 256 and 1,024 mocker workers. Usage: node --import tsx bench/replay-scaling.ts [requests]
import { SeededRandom } from "../src/engines/index.js";
import { replay, type TraceRequest } from "../src/sim/index.js";
import { machine } from "./load/processes.js";

const requests = Number(process.argv[2] ?? 100_000);
const rng = new SeededRandom(42);
const trace: TraceRequest[] = [];
let at = 0;
let nextId = 1_000_000;
for (let i = 0; i < requests; i++) {
  at += (-Math.log(1 - rng.next()) / 100) * 1000;
  const session = rng.int(2000);
  const blocks = 1 + rng.int(4);
  const hashIds = Array.from({ length: blocks }, (_, k) => (k < blocks - 1 ? session * 8 + k : nextId++));
  trace.push({ timestamp: at, inputLength: blocks * 512 - rng.int(256), outputLength: 16 + rng.int(49), hashIds });
}
console.log(
  `replay scaling — ${machine()} — ${requests.toLocaleString()} synthetic requests, ${(at / 1000).toFixed(0)} s of traffic\n`,
);
console.log("| workers | wall s | sim s | completed | hit rate | TTFT p50 / p99 ms |");
console.log("|---:|---:|---:|---:|---:|---:|");
for (const workers of [64, 256, 1024]) {
  const r = await replay({ trace, policy: "kv", workers, seed: 1 });
  console.log(
    `| ${workers} | ${r.wall_seconds.toFixed(1)} | ${r.sim_seconds.toFixed(0)} | ${r.completed} | ${(100 * r.hit_rate).toFixed(1)}% | ${r.ttft_ms.p50.toFixed(0)} / ${r.ttft_ms.p99.toFixed(0)} |`,
  );
}
