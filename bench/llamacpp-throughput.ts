// llamacpp decode throughput through armature (HTTP, streaming) against node-llama-cpp called
// directly, same GGUF, same prompt, greedy, one thread, EOS ignored. Runs alternate, median of 3.
// Usage: npm run bench:llamacpp
import { mkdtemp, writeFile } from "node:fs/promises";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";
import { streamCompletion } from "../src/bench/index.js";
import { buildTinyModel } from "../src/engines/index.js";
import { machine, spawnServer } from "./load/processes.js";

const TOKENS = 256;
const RUNS = 3;
const models = {
  "tiny (d64, 2 layers, 0.2M params)": {},
  "small (d256, 6 layers, ff1024, 5M params)": { embeddingLength: 256, layers: 6, heads: 8, feedForwardLength: 1024 },
};
const prompt = Array.from({ length: 32 }, (_, i) => 65 + (i % 26));
const agent = new Agent({ keepAlive: true });

async function direct(path: string): Promise<number> {
  const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1, logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({ contextSize: 2048, sequences: 4, threads: 1, batchSize: 512 });
  const sequence = context.getSequence();
  let count = 0;
  let firstAt = 0;
  for await (const _ of sequence.evaluate(prompt as Token[], { temperature: 0, yieldEogToken: true })) {
    if (count === 0) firstAt = performance.now();
    if (++count >= TOKENS) break;
  }
  const rate = (count - 1) / ((performance.now() - firstAt) / 1000);
  await context.dispose();
  await model.dispose();
  return rate;
}

/**
 * One streamed completion through armature, timed by `armature bench`'s client: tokens from usage,
 * the rate over the time from the first token to the last.
 */
async function throughArmature(url: string): Promise<number> {
  const body = { model: "bench", prompt, max_tokens: TOKENS, temperature: 0, ignore_eos: true };
  const timing = await streamCompletion(url, body, agent);
  if (!timing.ok || timing.completionTokens !== TOKENS) {
    throw new Error(`the stream did not complete: ${timing.error ?? `${timing.completionTokens} tokens`}`);
  }
  return 1000 / timing.itlMs;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(`llamacpp throughput — ${machine()} — ${TOKENS} tokens, greedy, 1 thread\n`);
console.log("| model | node-llama-cpp direct (tok/s) | through armature (tok/s) | ratio |");
console.log("|---|---:|---:|---:|");
for (const [name, options] of Object.entries(models)) {
  const path = join(await mkdtemp(join(tmpdir(), "armature-bench-")), "model.gguf");
  await writeFile(path, buildTinyModel(options));
  const server = await spawnServer([
    "bin/armature.js",
    "serve",
    "--model",
    path,
    "--model-name",
    "bench",
    "--port",
    "0",
    "--log-level",
    "warn",
  ]);
  const d: number[] = [];
  const a: number[] = [];
  try {
    await throughArmature(server.url); // warm-up
    for (let i = 0; i < RUNS; i++) {
      d.push(await direct(path));
      a.push(await throughArmature(server.url));
    }
  } finally {
    await server.stop();
  }
  console.log(`| ${name} | ${median(d).toFixed(0)} | ${median(a).toFixed(0)} | ${((100 * median(a)) / median(d)).toFixed(1)}% |`);
}
