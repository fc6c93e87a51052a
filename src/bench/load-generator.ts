import { Agent } from "node:http";
import { SeededRandom } from "../engines/index.js";
import { type Summary, summarize, synthesizeTokens, type TraceRequest } from "../sim/index.js";
import { type RequestTiming, streamCompletion } from "./stream-request.js";

/** How requests are issued. */
export type LoadMode =
  | {
      readonly kind: "concurrency";
      readonly concurrency: number;
      /** Requests in all; or, with `durationMs`, the most to start. */
      readonly requests: number;
      /** Stop starting requests after this long (closed loop for a fixed time). Default: no limit. */
      readonly durationMs?: number | undefined;
    }
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
  /** One text prompt for every request instead of random token ids (trace mode ignores it). */
  readonly promptText?: string | undefined;
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
  /** Completed requests per second. */
  readonly requests_per_s: number;
  readonly hit_rate: number;
  readonly ttft_ms: Summary;
  readonly itl_ms: Summary;
  /** From sending to the end of the stream, completed requests. */
  readonly latency_ms: Summary;
  /** Generated tokens per second, counted from the server's usage, completed requests only. */
  readonly throughput_tok_s: number;
  /** Completed requests whose server sent no usage (their tokens are counted from text chunks). */
  readonly without_usage: number;
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
  const send = async (index: number): Promise<void> => {
    const body = plan.bodyAt(index);
    timings.push(await streamCompletion(options.url, { model: options.model, temperature: 0, ignore_eos: true, ...body }, agent));
    if (timings.length % 100 === 0) options.onProgress?.(timings.length, plan.count);
  };
  if (options.mode.kind === "concurrency") {
    const { durationMs } = options.mode;
    const more = (): boolean => durationMs === undefined || performance.now() - started < durationMs;
    let next = 0;
    await Promise.all(
      Array.from({ length: options.mode.concurrency }, async () => {
        while (next < plan.count && more()) await send(next++);
      }),
    );
  } else {
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < plan.count; i++) {
      const wait = plan.startMs(i) - (performance.now() - started);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      inflight.push(send(i));
    }
    await Promise.all(inflight);
  }
  agent.destroy();
  return report(timings, (performance.now() - started) / 1000, options);
}

/** The requests of a run; bodies are made as they are sent (in index order), so long runs hold none. */
interface RequestPlan {
  readonly count: number;
  bodyAt(index: number): Record<string, unknown>;
  /** When request `index` starts, ms from the run's start (open-loop modes). */
  startMs(index: number): number;
}

function planRequests(options: BenchOptions, rng: SeededRandom, vocab: number): RequestPlan {
  const mode = options.mode;
  if (mode.kind === "trace") {
    return {
      count: mode.trace.length,
      bodyAt: (i) => {
        const r = mode.trace[i] as TraceRequest;
        return { prompt: synthesizeTokens(r, mode.traceBlockSize, vocab, i), max_tokens: r.outputLength };
      },
      startMs: (i) => (mode.trace[i] as TraceRequest).timestamp / mode.speedup,
    };
  }
  const input = options.inputTokens ?? 128;
  const output = options.outputTokens ?? 32;
  // Arrivals draw from their own stream, so a run's prompts do not depend on its mode.
  const arrivals = new SeededRandom((options.seed ?? 1) + 1);
  let at = 0;
  let arrived = -1;
  return {
    count: mode.requests,
    bodyAt: () => ({
      prompt: options.promptText ?? Array.from({ length: input }, () => rng.int(vocab)),
      max_tokens: output,
    }),
    startMs: (i) => {
      for (; arrived < i; arrived++) {
        if (arrived >= 0 && mode.kind === "rate") at += (-Math.log(1 - arrivals.next()) / mode.requestsPerSecond) * 1000;
      }
      return at;
    },
  };
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
    requests_per_s: ok.length / seconds,
    hit_rate: prompt === 0 ? 0 : ok.reduce((a, t) => a + t.cachedTokens, 0) / prompt,
    ttft_ms: summarize(ok.map((t) => t.ttftMs).filter((x) => !Number.isNaN(x))),
    itl_ms: summarize(ok.map((t) => t.itlMs).filter((x) => !Number.isNaN(x))),
    latency_ms: summarize(ok.map((t) => t.latencyMs)),
    throughput_tok_s: ok.reduce((a, t) => a + t.completionTokens, 0) / seconds,
    without_usage: ok.filter((t) => !t.usageReported).length,
    goodput_rps: good.length / seconds,
    errors: [...new Set(timings.filter((t) => !t.ok).map((t) => t.error ?? "unknown"))].slice(0, 5),
  };
}
