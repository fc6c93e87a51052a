// One stream at a time on llama.cpp: node-llama-cpp driving a sequence directly against `armature
// serve --engine llamacpp` with the same GGUF (the 0.2M tiny model), one thread, a fresh 64-token
// prompt per request, over a kept connection and over a fresh one, alternating. Reports the median
// time to the first token and to the stream's end. What armature adds to one request shows without
// the contention of concurrent streams.
// Usage: node --import tsx bench/llamacpp-single-stream.ts [TOKENS=128] [REQUESTS=20]
import { mkdtemp, writeFile } from "node:fs/promises";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";
import { streamCompletion } from "../src/bench/index.js";
import { buildTinyModel } from "../src/engines/index.js";
import { machine, spawnServer } from "./load/processes.js";

const TOKENS = Number(process.argv[2] ?? 128);
const REQUESTS = Number(process.argv[3] ?? 20);
const WARMUP = 30;
const SAMPLING = { temperature: 0.8, top_p: 0.95, top_k: 0, min_p: 0 };

let seed = 0;
/** A prompt no earlier request sent (printable-ASCII byte tokens of the generated vocabulary). */
function freshPrompt(): number[] {
  const s = ++seed;
  return Array.from({ length: 64 }, (_, i) => 40 + ((s * 31 + i * 7) % 60));
}

const path = join(await mkdtemp(join(tmpdir(), "armature-bench-")), "model.gguf");
await writeFile(path, buildTinyModel({}));
const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1, logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath: path });
const context = await model.createContext({
  contextSize: 2048,
  sequences: 4,
  threads: 1,
  batchSize: 512,
  flashAttention: "auto",
});
const sequence = context.getSequence();
const flags = "--port 0 --log-level warn --model-name bench --threads 1 --sequences 4".split(" ");
const server = await spawnServer(["bin/armature.js", "serve", ...flags, "--model", path]);
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** [time to first token, time to the end] in ms. */
async function direct(): Promise<[number, number]> {
  const started = performance.now();
  await sequence.clearHistory();
  let first = 0;
  let count = 0;
  const options = { temperature: SAMPLING.temperature, topP: SAMPLING.top_p, topK: 0, minP: 0, seed, yieldEogToken: true };
  for await (const _ of sequence.evaluate(freshPrompt() as Token[], options)) {
    if (count === 0) first = performance.now() - started;
    if (++count >= TOKENS) break;
  }
  return [first, performance.now() - started];
}

async function overHttp(fresh: boolean): Promise<[number, number]> {
  if (fresh) agent.destroy();
  const started = performance.now();
  const body = { model: "bench", prompt: freshPrompt(), max_tokens: TOKENS, ignore_eos: true, ...SAMPLING };
  const t = await streamCompletion(server.url, body, agent);
  if (!t.ok || t.completionTokens !== TOKENS) throw new Error(`a stream did not complete: ${t.error ?? t.completionTokens}`);
  return [t.ttftMs, performance.now() - started];
}

const median = (xs: number[]) => ([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number).toFixed(2);
try {
  for (let i = 0; i < WARMUP; i++) {
    await direct();
    await overHttp(false);
  }
  const runs: Record<string, [number, number][]> = { direct: [], kept: [], fresh: [] };
  for (let i = 0; i < REQUESTS; i++) {
    runs.direct?.push(await direct());
    runs.kept?.push(await overHttp(false));
    runs.fresh?.push(await overHttp(true));
  }
  console.log(`llama.cpp, one stream at a time — ${machine()} — ${TOKENS} tokens, 64-token prompts, median of ${REQUESTS}\n`);
  console.log("| path | TTFT ms | stream ms |\n|---|---:|---:|");
  const names = { direct: "node-llama-cpp direct", kept: "armature, kept connection", fresh: "armature, fresh connection" };
  for (const [key, rows] of Object.entries(runs)) {
    console.log(`| ${names[key as keyof typeof names]} | ${median(rows.map((r) => r[0]))} | ${median(rows.map((r) => r[1]))} |`);
  }
} finally {
  await server.stop();
  await context.dispose();
  await model.dispose();
}
