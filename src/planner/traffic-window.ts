import type { IntervalLoad } from "./interval-load.js";
import type { WorkerLatencyEstimate } from "./latency-estimate.js";

/** One finished request as the frontend saw it. */
export interface FinishedRequest {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  /** Time to the first token, ms (absent when none came). */
  readonly ttftMs?: number | undefined;
  /** Mean time between tokens after the first, ms (absent with fewer than two tokens). */
  readonly itlMs?: number | undefined;
}

/** Latencies averaged for the load loop by default: the requests of this many most recent ms. */
const LATENCY_WINDOW_MS = 30_000;

/**
 * What the planner reads of the traffic: requests finished since the last interval (rate, mean
 * lengths, KV hit rate), and the recent TTFT and ITL of finished requests — the load loop's
 * measured estimate when no profile turns worker load into one.
 */
export class TrafficWindow {
  readonly #windowMs: number;
  #since: number;
  #count = 0;
  #input = 0;
  #output = 0;
  #cached = 0;
  readonly #recent: Array<{ at: number; ttftMs?: number | undefined; itlMs?: number | undefined }> = [];

  /** `latencyWindowMs`: how far back `measured` looks (default 30 s). */
  constructor(startMs: number, latencyWindowMs = LATENCY_WINDOW_MS) {
    this.#since = startMs;
    this.#windowMs = latencyWindowMs;
  }

  record(nowMs: number, request: FinishedRequest): void {
    this.#count++;
    this.#input += request.inputTokens;
    this.#output += request.outputTokens;
    this.#cached += Math.min(request.cachedTokens, request.inputTokens);
    this.#recent.push({ at: nowMs, ttftMs: request.ttftMs, itlMs: request.itlMs });
    this.#trim(nowMs);
  }

  /** The interval since the previous call; the next one starts now. */
  takeInterval(nowMs: number): IntervalLoad {
    const seconds = Math.max(1e-9, (nowMs - this.#since) / 1000);
    const n = this.#count;
    const load: IntervalLoad = {
      requestsPerSecond: n / seconds,
      meanInputTokens: n > 0 ? this.#input / n : 0,
      meanOutputTokens: n > 0 ? this.#output / n : 0,
      kvHitRate: this.#input > 0 ? this.#cached / this.#input : 0,
    };
    this.#since = nowMs;
    this.#count = 0;
    this.#input = 0;
    this.#output = 0;
    this.#cached = 0;
    return load;
  }

  /** Mean TTFT and ITL of the requests finished within the latency window; undefined when none. */
  measured(nowMs: number): WorkerLatencyEstimate | undefined {
    this.#trim(nowMs);
    const ttft = this.#recent.flatMap((r) => (r.ttftMs === undefined ? [] : [r.ttftMs]));
    const itl = this.#recent.flatMap((r) => (r.itlMs === undefined ? [] : [r.itlMs]));
    if (ttft.length === 0 && itl.length === 0) return undefined;
    return { ttftMs: mean(ttft), itlMs: mean(itl) };
  }

  #trim(nowMs: number): void {
    while (this.#recent.length > 0 && (this.#recent[0]?.at ?? nowMs) < nowMs - this.#windowMs) this.#recent.shift();
  }
}

function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}
