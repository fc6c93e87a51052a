// Long prompts through the GGUF tokenizer (the generated tiny model's byte-level BPE, llama.cpp's
// synchronous tokenizer): the event loop's longest pause while four 100,000-character prompts are
// tokenized, on the loop (`encode`, what the frontend did) and through `encodeAsync` (the tokenizing
// thread the frontend now uses for prompts of 8,192 characters or more). A 1 ms interval timer
// stands for the streams the loop serves meanwhile: its longest gap is what a stream would wait.
// The same for a Hugging Face tokenizer (Qwen3's tokenizer.json through tokenizers.js, what
// `--tokenizer DIR` loads), and each tokenizer's cost per character on the loop.
// Usage: node --import tsx bench/tokenize-off-loop.ts
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HfTokenizer } from "../src/engines/huggingface/hf-tokenizer.js";
import { ensureTinyModel } from "../src/engines/index.js";
import { GgufTokenizer } from "../src/engines/llamacpp/gguf-tokenizer.js";
import { qwen3TokenizerDir } from "../test/helpers/tokenizer-folders.js";
import { longPrompt } from "./load/long-prompt.js";
import { machine } from "./load/processes.js";

const PROMPTS = 4;
const CHARACTERS = 100_000;

/**
 * Runs `work` with a 1 ms timer ticking; returns the timer's longest gap, how long in all the loop
 * was held past the timer's period (each gap's excess over 1 ms, summed) and the work's wall time.
 */
async function measured(work: () => Promise<unknown>): Promise<{ gapMs: number; heldMs: number; wallMs: number }> {
  let last = performance.now();
  let gapMs = 0;
  let heldMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gapMs = Math.max(gapMs, now - last);
    heldMs += Math.max(0, now - last - 1);
    last = now;
  }, 1);
  const started = performance.now();
  await work();
  const wallMs = performance.now() - started;
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(timer);
  return { gapMs, heldMs, wallMs };
}

type Measured = GgufTokenizer | HfTokenizer;
const tokenizers: [string, Measured][] = [
  [
    "the tiny model's GGUF (llama.cpp)",
    await GgufTokenizer.load(await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-bench-")))),
  ],
  ["Qwen3's tokenizer.json (tokenizers.js)", HfTokenizer.load(qwen3TokenizerDir())],
];
const prompts = Array.from({ length: PROMPTS }, (_, i) => longPrompt(i, CHARACTERS));
console.log(`${machine()}\n`);
for (const [name, tokenizer] of tokenizers) {
  if (!(await tokenizer.offLoopReady())) throw new Error("the tokenizing thread did not start");
  const tokens = prompts.reduce((n, p) => n + tokenizer.encode(p, { special: true }).length, 0);
  const started = performance.now();
  for (const p of prompts) tokenizer.encode(p, { special: true });
  const perCharacterUs = ((performance.now() - started) * 1000) / (PROMPTS * CHARACTERS);
  console.log(
    `${name}: ${PROMPTS} prompts of ${CHARACTERS} characters, ${tokens} tokens, ${perCharacterUs.toFixed(2)} µs a character on the loop\n`,
  );
  console.log("| run | how | longest event-loop gap ms | loop held ms | wall ms |");
  console.log("|---:|---|---:|---:|---:|");
  await rounds(tokenizer);
  console.log("");
  await tokenizer.close();
}

async function rounds(tokenizer: Measured): Promise<void> {
  for (let run = 1; run <= 3; run++) {
    const onLoop = await measured(async () => {
      for (const p of prompts) {
        tokenizer.encode(p, { special: true });
        await new Promise((r) => setImmediate(r)); // requests arrive one by one
      }
    });
    const offLoop = await measured(() => Promise.all(prompts.map((p) => tokenizer.encodeAsync(p, { special: true }))));
    const idle = await measured(() => new Promise((r) => setTimeout(r, 200)));
    for (const [how, m] of [
      ["on the loop (encode)", onLoop],
      ["tokenizing thread (encodeAsync)", offLoop],
      ["nothing (200 ms of the timer alone)", idle],
    ] as const) {
      console.log(`| ${run} | ${how} | ${m.gapMs.toFixed(1)} | ${m.heldMs.toFixed(1)} | ${m.wallMs.toFixed(0)} |`);
    }
  }
}
