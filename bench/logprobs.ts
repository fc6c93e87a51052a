// The cost of log-probabilities: decode tokens/s of the generated tiny model through `armature serve`,
// the same chat prompt answered greedily to the same length (end-of-sequence ignored) without
// logprobs, with `logprobs: true`, and with `top_logprobs: 20`. Rounds alternate; the best round of
// each (the least disturbed on a shared machine) and medians.
// Usage: node --import tsx bench/logprobs.ts [rounds] [tokens]
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readGgufFileInfo } from "node-llama-cpp";
import { ensureTinyModel } from "../src/engines/index.js";
import { machine, spawnServer } from "./load/processes.js";

const ROUNDS = Number(process.argv[2] ?? 15);
const TOKENS = Number(process.argv[3] ?? 400);
const MODEL = "armature-tiny";
const messages = [{ role: "user", content: "Tell me a long story about the sea." }];

async function chat(url: string, extra: Record<string, unknown>): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, messages, temperature: 0, max_tokens: TOKENS, ignore_eos: true, ...extra }),
  });
  const json = (await res.json()) as { usage: { completion_tokens: number } };
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${JSON.stringify(json)}`);
  if (json.usage.completion_tokens !== TOKENS) throw new Error(`got ${json.usage.completion_tokens} tokens`);
  return TOKENS / ((performance.now() - started) / 1000);
}

const variants = [
  { name: "no logprobs", extra: {} },
  { name: "`logprobs: true`", extra: { logprobs: true } },
  { name: "`logprobs: true, top_logprobs: 20`", extra: { logprobs: true, top_logprobs: 20 } },
];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const cacheDir = await mkdtemp(join(tmpdir(), "armature-bench-logprobs-"));
process.env.ARMATURE_CACHE_DIR = cacheDir;
const info = await readGgufFileInfo(await ensureTinyModel(cacheDir));
const vocab = (info.metadata.tokenizer.ggml.tokens as unknown[]).length;
const server = await spawnServer(["bin/armature.js", "serve", "--context-size", "2048", "--port", "0", "--log-level", "warn"]);
const rates: number[][] = variants.map(() => []);
try {
  for (const v of variants) await chat(server.url, v.extra); // warm-up
  for (let i = 0; i < ROUNDS; i++) {
    for (const [k, v] of variants.entries()) rates[k]?.push(await chat(server.url, v.extra));
  }
} finally {
  await server.stop();
}
const best = (xs: number[]) => Math.max(...xs);
const base = best(rates[0] ?? []);
console.log(`logprobs cost — ${machine()} — tiny model (vocabulary ${vocab}), ${TOKENS} tokens per answer, ${ROUNDS} rounds\n`);
console.log("| answer | tokens/s, best round | tokens/s, median | best / no logprobs |");
console.log("|---|---:|---:|---:|");
for (const [k, v] of variants.entries()) {
  const xs = rates[k] ?? [];
  console.log(`| ${v.name} | ${best(xs).toFixed(0)} | ${median(xs).toFixed(0)} | ${((100 * best(xs)) / base).toFixed(1)}% |`);
}
