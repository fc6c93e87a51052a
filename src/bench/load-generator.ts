import { Agent } from "node:http";
import { SeededRandom } from "../engines/index.js";
import { type Summary, summarize, synthesizeTokens, type TraceRequest } from "../sim/index.js";
import { type RequestTiming, streamCompletion } from "./stream-request.js";

/** How requests are issued. */
export type LoadMode =
  | { readonly kind: "concurrency"; readonly concurrency: number; readonly requests: number }
  | { readonly kind: "rate"; readonly requestsPerSecond: number; readonly requests: number }
  | {
      readonly kind: "trace";
      readonly trace: readonly TraceRequest[];
      readonly speedup: number;
      readonly traceBlockSize: number;
    };

export interface BenchOptions {
  readonly url: string;
  readonly model: string;
  readonly mode: LoadMode;
  /** Prompt length and completion length outside trace mode. */
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  /** Token ids are drawn below this (the served model's vocabulary). Default 256. */
  readonly vocabSize?: number;
  readonly sloTtftMs?: number;
  readonly sloItlMs?: number;
  readonly seed?: number;
  readonly onProgress?: (done: number, total: number) => void;
}

export interface BenchReport {
  readonly requests: number;
  readonly completed: number;
  readonly failed: number;
  readonly seconds: number;
  readonly hit_rate: number;
  readonly ttft_ms: Summary;
  readonly itl_ms: Summary;
  readonly throughput_tok_s: number;
  /** Completed requests per second that met both SLOs. */
  readonly goodput_rps: number;
  readonly errors: readonly string[];
}

/**
 * A load generator for any OpenAI-compatible server: closed-loop concurrency, open-loop Poisson
 * rate, or a Mooncake trace replayed on the wall clock (prompts as token ids synthesized from the
 * hash ids, so equal ids give equal prompts, as in `armature replay`).
 */
export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const agent = new Agent({ keepAlive: true, maxSockets: 4096 });
  const rng = new SeededRandom(options.seed ?? 1);
  const vocab = options.vocabSize ?? 256;
  const timings: RequestTiming[] = [];
  const plan = planRequests(options, rng, vocab);
  const started = performance.now();
  const send = async (body: Record<string, unknown>): Promise<void> => {
    timings.push(await streamCompletion(options.url, { model: options.model, temperature: 0, ignore_eos: true, ...body }, agent));
    if (timings.length % 100 === 0) options.onProgress?.(timings.length, plan.bodies.length);
  };
  if (options.mode.kind === "concurrency") {
    let next = 0;
    await Promise.all(
      Array.from({ length: options.mode.concurrency }, async () => {
        while (next < plan.bodies.length) await send(plan.bodies[next++] as Record<string, unknown>);
      }),
    );
  } else {
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < plan.bodies.length; i++) {
      const wait = (plan.startsMs[i] ?? 0) - (performance.now() - started);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      inflight.push(send(plan.bodies[i] as Record<string, unknown>));
    }
    await Promise.all(inflight);
  }
  agent.destroy();
  return report(timings, (performance.now() - started) / 1000, options);
}

function planRequests(
  options: BenchOptions,
  rng: SeededRandom,
  vocab: number,
): { bodies: Record<string, unknown>[]; startsMs: number[] } {
  const mode = options.mode;
  if (mode.kind === "trace") {
    return {
      bodies: mode.trace.map((r, i) => ({
        prompt: synthesizeTokens(r, mode.traceBlockSize, vocab, i),
        max_tokens: r.outputLength,
      })),
      startsMs: mode.trace.map((r) => r.timestamp / mode.speedup),
    };
  }
  const count = mode.requests;
  const input = options.inputTokens ?? 128;
  const output = options.outputTokens ?? 32;
  const bodies = Array.from({ length: count }, () => ({
    prompt: Array.from({ length: input }, () => rng.int(vocab)),
    max_tokens: output,
  }));
  const startsMs: number[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    startsMs.push(at);
    if (mode.kind === "rate") at += (-Math.log(1 - rng.next()) / mode.requestsPerSecond) * 1000;
  }
  return { bodies, startsMs };
}

function report(timings: readonly RequestTiming[], seconds: number, options: BenchOptions): BenchReport {
  const ok = timings.filter((t) => t.ok);
  const prompt = ok.reduce((a, t) => a + t.promptTokens, 0);
  const good = ok.filter(
    (t) =>
      (options.sloTtftMs === undefined || t.ttftMs <= options.sloTtftMs) &&
      (options.sloItlMs === undefined || Number.isNaN(t.itlMs) || t.itlMs <= options.sloItlMs),
  );
  return {
    requests: timings.length,
    completed: ok.length,
    failed: timings.length - ok.length,
    seconds,
    hit_rate: prompt === 0 ? 0 : ok.reduce((a, t) => a + t.cachedTokens, 0) / prompt,
    ttft_ms: summarize(ok.map((t) => t.ttftMs).filter((x) => !Number.isNaN(x))),
    itl_ms: summarize(ok.map((t) => t.itlMs).filter((x) => !Number.isNaN(x))),
    throughput_tok_s: ok.reduce((a, t) => a + t.completionTokens, 0) / seconds,
    goodput_rps: good.length / seconds,
    errors: [...new Set(timings.filter((t) => !t.ok).map((t) => t.error ?? "unknown"))].slice(0, 5),
  };
}
