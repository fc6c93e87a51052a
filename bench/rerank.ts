// Reranking through armature against llama.cpp's own llama-server on the same GGUF: the generated
// tiny ranker (`armature model tiny-ranker`), `armature serve --model RANKER --threads 1` against
// `llama-server --rerank --threads 1 --parallel 1`, each asked the same `/v1/rerank` requests one
// at a time (a query and D documents of corpus prose), after a warm-up. Reports each side's
// latency (p50 / p90 over the requests) and the largest difference between the two servers'
// scores of the same document (two implementations of the model's ranking: node-llama-cpp's
// ranking context and llama-server's). Needs llama-server (`node scripts/build-llama-server.mjs`).
// Usage: node --import tsx bench/rerank.ts [requests] [documents]
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeTinyRanker } from "../src/engines/index.js";
import { startLlamaServer } from "../test/helpers/llama-server.js";
import { machine, spawnServer } from "./load/processes.js";

const requests = Number(process.argv[2] ?? 30);
const documentCount = Number(process.argv[3] ?? 16);
const WORDS = "the sea is wide and the ship sails on the water where the wind blows over the harbour and the town".split(" ");

/** Document `i` of request `r`: a dozen corpus words, some of them " sea", different every time. */
function document(r: number, i: number): string {
  return Array.from({ length: 12 }, (_, k) => WORDS[(r * 7 + i * 5 + k * 3) % WORDS.length]).join(" ");
}

interface Ranked {
  readonly ms: number;
  readonly scores: Map<number, number>;
}

async function rerank(url: string, r: number): Promise<Ranked> {
  const started = performance.now();
  const res = await fetch(`${url}/v1/rerank`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "ranker",
      query: `where is the sea ${r}?`,
      documents: Array.from({ length: documentCount }, (_, i) => document(r, i)),
      top_n: documentCount,
    }),
  });
  const body = (await res.json()) as { results?: { index: number; relevance_score: number }[] };
  const ms = performance.now() - started;
  if (!res.ok || !body.results) throw new Error(`${url}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  return { ms, scores: new Map(body.results.map((x) => [x.index, x.relevance_score])) };
}

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};

const path = join(await mkdtemp(join(tmpdir(), "armature-rerank-")), "ranker.gguf");
await writeTinyRanker(path);
const llamaServer = await startLlamaServer({ model: path, slots: 1, contextPerSlot: 2048, threads: 1, extraArgs: ["--rerank"] });
const armature = await spawnServer([
  "bin/armature.js",
  "serve",
  "--port",
  "0",
  "--log-level",
  "warn",
  "--model",
  `${path}=ranker`,
  "--threads",
  "1",
]);
try {
  const sides = { armature: armature.url, "llama-server": llamaServer.url };
  const runs: Record<string, Ranked[]> = { armature: [], "llama-server": [] };
  for (const url of Object.values(sides)) await rerank(url, -1); // warm-up: contexts made, pages touched
  for (let r = 0; r < requests; r++) {
    for (const [name, url] of Object.entries(sides)) runs[name]?.push(await rerank(url, r));
  }
  let largest = 0;
  for (let r = 0; r < requests; r++) {
    const a = runs.armature?.[r] as Ranked;
    const b = runs["llama-server"]?.[r] as Ranked;
    for (const [index, score] of a.scores) largest = Math.max(largest, Math.abs(score - (b.scores.get(index) ?? Number.NaN)));
  }
  console.log(`Rerank — ${machine()} — ${requests} requests of ${documentCount} documents, one at a time, 1 thread\n`);
  console.log("| server | latency p50 / p90 (ms) | documents/s |");
  console.log("|---|---:|---:|");
  for (const [name, ranked] of Object.entries(runs)) {
    const ms = ranked.map((x) => x.ms);
    console.log(
      `| ${name} | ${quantile(ms, 0.5).toFixed(1)} / ${quantile(ms, 0.9).toFixed(1)} | ${((documentCount * 1000) / quantile(ms, 0.5)).toFixed(0)} |`,
    );
  }
  console.log(`\nlargest difference between the two servers' scores of one document: ${largest.toExponential(2)}`);
} finally {
  await armature.stop();
  await llamaServer.stop();
}
