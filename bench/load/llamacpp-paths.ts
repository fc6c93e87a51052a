// What the llama.cpp benchmarks share: prompts no earlier request sent, the sampling every path is
// asked for, a batch of streamed completions over HTTP, and node-llama-cpp driving sequences
// directly (the engine armature embeds, without armature).
import type { Agent } from "node:http";
import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";
import { streamCompletion } from "../../src/bench/index.js";

export const PROMPT_TOKENS = 64;
/** Asked of every path: node-llama-cpp's own defaults (top-k 40) would sample from 40 tokens where the servers sort the whole vocabulary. */
export const SAMPLING = { temperature: 0.8, top_p: 0.95, top_k: 0, min_p: 0 };

let promptSeed = 0;
/** A prompt no earlier request sent (printable-ASCII byte tokens of the generated vocabulary). */
export function freshPrompt(): number[] {
  const seed = ++promptSeed;
  return Array.from({ length: PROMPT_TOKENS }, (_, i) => 40 + ((seed * 31 + i * 7) % 60));
}

export interface Batch {
  /** Tokens of all streams over the batch's wall time. */
  readonly tokensPerSecond: number;
  readonly ttftMs: number[];
  readonly wallMs: number;
}

/** `streams` concurrent streamed completions of `tokens` each (EOS ignored); throws unless every one completes. */
export async function streamBatch(url: string, model: string, streams: number, tokens: number, agent: Agent): Promise<Batch> {
  const started = performance.now();
  const timings = await Promise.all(
    Array.from({ length: streams }, () =>
      streamCompletion(url, { model, prompt: freshPrompt(), max_tokens: tokens, ignore_eos: true, ...SAMPLING }, agent),
    ),
  );
  const wallMs = performance.now() - started;
  for (const t of timings) {
    if (!t.ok || t.completionTokens !== tokens)
      throw new Error(`a stream did not complete: ${t.error ?? `${t.completionTokens} tokens`}`);
  }
  return { tokensPerSecond: (streams * tokens) / (wallMs / 1000), ttftMs: timings.map((t) => t.ttftMs), wallMs };
}

/**
 * node-llama-cpp driving up to `sequences` sequences of one context at once, as armature's engine
 * does, with the context armature's worker makes by default (its `--flash-attention auto`;
 * node-llama-cpp's own default is off).
 */
export async function directRunner(path: string, options: { threads: number; sequences: number; tokens: number }) {
  const { threads, sequences: count, tokens } = options;
  const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads, logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({
    contextSize: 2048,
    sequences: count,
    threads,
    batchSize: 512,
    flashAttention: "auto",
  });
  const sequences = Array.from({ length: count }, () => context.getSequence());
  return {
    async run(streams: number): Promise<Batch> {
      const started = performance.now();
      const ttftMs: number[] = [];
      await Promise.all(
        sequences.slice(0, streams).map(async (sequence) => {
          await sequence.clearHistory();
          let count = 0;
          const prompt = freshPrompt();
          const evaluateOptions = {
            temperature: SAMPLING.temperature,
            topP: SAMPLING.top_p,
            topK: SAMPLING.top_k,
            minP: SAMPLING.min_p,
            seed: promptSeed,
            yieldEogToken: true,
          };
          for await (const _ of sequence.evaluate(prompt as Token[], evaluateOptions)) {
            if (count === 0) ttftMs.push(performance.now() - started);
            if (++count >= tokens) break;
          }
        }),
      );
      const wallMs = performance.now() - started;
      return { tokensPerSecond: (streams * tokens) / (wallMs / 1000), ttftMs, wallMs };
    },
    async close() {
      await context.dispose();
      await model.dispose();
    },
  };
}
