// Does llama.cpp decode the next token while the server works on this one? One llama.cpp context
// as armature's worker makes it (`createContext`, one thread, 4 sequences) on the 0.2M-parameter
// generated model; a consumer that spins a fixed time on each token (standing in for the server's
// per-token path), reading either straight from node-llama-cpp's generator (serial: each token's
// work delays the next decode) or through the engine's `TokenPump` (decision 0030). Tokens/s of one
// stream of TOKENS sampled tokens, rounds alternating, median of ROUNDS after a warm-up.
// Usage: node --import tsx bench/llamacpp-token-overlap.ts [ROUNDS]
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";
import { buildTinyModel } from "../src/engines/index.js";
import { createContext } from "../src/engines/llamacpp/llama-context.js";
import { TokenPump } from "../src/engines/llamacpp/token-pump.js";
import { machine } from "./load/processes.js";

const ROUNDS = Number(process.argv[2] ?? 7);
const TOKENS = 512;
const WORK_US = [0, 100, 300];
const path = join(await mkdtemp(join(tmpdir(), "armature-bench-")), "model.gguf");
await writeFile(path, buildTinyModel({}));
const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1, logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath: path });
const context = await createContext(model, { contextSize: 2048, sequences: 4, threads: 1 });
const sequence = context.getSequence();

let seed = 0;
function evaluation() {
  seed++;
  const prompt = Array.from({ length: 64 }, (_, i) => 40 + ((seed * 31 + i * 7) % 60)) as Token[];
  return sequence.evaluate(prompt, { temperature: 0.8, topP: 0.95, topK: 0, minP: 0, seed, yieldEogToken: true });
}
function spin(us: number): void {
  const end = performance.now() + us / 1000;
  while (performance.now() < end) {}
}

/** Tokens/s after the first token, the consumer spinning `workUs` on each. */
async function run(pumped: boolean, workUs: number): Promise<number> {
  await sequence.clearHistory();
  let count = 0;
  let first = 0;
  const took = (): void => {
    if (count++ === 0) first = performance.now();
    spin(workUs);
  };
  if (pumped) {
    const pump = new TokenPump(evaluation()[Symbol.asyncIterator](), { capacity: 4, limit: TOKENS, onToken: () => {} });
    while ((await pump.next()) !== undefined) took();
    await pump.stop();
  } else {
    for await (const _ of evaluation()) {
      took();
      if (count >= TOKENS) break;
    }
  }
  return (count - 1) / ((performance.now() - first) / 1000);
}

for (let i = 0; i < 8; i++) await run(i % 2 === 0, 0); // warm-up
const rates = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const workUs of WORK_US) {
    for (const pumped of round % 2 === 0 ? [false, true] : [true, false]) {
      const key = `${workUs}:${pumped}`;
      rates.set(key, [...(rates.get(key) ?? []), await run(pumped, workUs)]);
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(`Token overlap — ${machine()} — 0.2M model, 1 thread, ${TOKENS} tokens a stream, median of ${ROUNDS}\n`);
console.log(
  "| consumer work a token (µs) | straight from the generator: tok/s | µs a token | through the pump: tok/s | µs a token |",
);
console.log("|---:|---:|---:|---:|---:|");
for (const workUs of WORK_US) {
  const serial = median(rates.get(`${workUs}:false`) ?? []);
  const pumped = median(rates.get(`${workUs}:true`) ?? []);
  console.log(
    `| ${workUs} | ${serial.toFixed(0)} | ${(1e6 / serial).toFixed(0)} | ${pumped.toFixed(0)} | ${(1e6 / pumped).toFixed(0)} |`,
  );
}
await context.dispose();
await model.dispose();
