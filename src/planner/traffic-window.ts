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

/** Requests finished in one period, as sums (a frontend's traffic report carries these fields). */
export interface TrafficSummary {
  readonly requests: number;
  /** Requests that arrived in the period, where the summary's source counts them (see `arrived`). */
  readonly arrivals?: number | undefined;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  /** Sum of the TTFTs, ms, of the `ttftCount` requests that got a first token. */
  readonly ttftMsSum: number;
  readonly ttftCount: number;
  /** Sum of the mean ITLs, ms, of the `itlCount` requests with two tokens or more. */
  readonly itlMsSum: number;
  readonly itlCount: number;
  /** The same latency sums per worker (TTFTs where prefilled, ITLs where decoded), when known. */
  readonly workers?: readonly ({ readonly workerId: string } & LatencySums)[] | undefined;
}

interface LatencySums {
  readonly ttftMsSum: number;
  readonly ttftCount: number;
  readonly itlMsSum: number;
  readonly itlCount: number;
}

interface RecentLatencies extends LatencySums {
  readonly at: number;
  /** By worker, where the report said. */
  readonly workers?: readonly ({ readonly workerId: string } & LatencySums)[] | undefined;
  readonly ttftMsSum: number;
  readonly ttftCount: number;
  readonly itlMsSum: number;
  readonly itlCount: number;
}

/**
 * What the planner reads of the traffic: requests finished since the last interval (rate, mean
 * lengths, KV hit rate), and, when given a latency window, the recent TTFT and ITL of finished
 * requests — `armature planner`'s measured estimate, read from the frontends' reports.
 *
 * The rate is that of arrivals once the caller reports them (`arrived`): an overloaded fleet
 * finishes requests no faster than it can serve them, so a rate of finished requests caps the
 * demand at the capacity the planner is trying to size (a step from 1 to 5 req/s read as the
 * 3 req/s one worker finishes). The lengths and hit rate stay those of finished requests, the only
 * ones whose output is known.
 */
export class TrafficWindow {
  readonly #windowMs: number | undefined;
  #since: number;
  #count = 0;
  #input = 0;
  #output = 0;
  #cached = 0;
  /** Arrivals since the last interval, counted once any was reported. */
  #arrivals = 0;
  #countsArrivals = false;
  readonly #recent: RecentLatencies[] = [];

  /**
   * `latencyWindowMs`: how far back `measured` looks. Without it no latencies are kept (a planner
   * that reads live latencies per worker needs only the interval's load).
   */
  constructor(startMs: number, latencyWindowMs?: number) {
    this.#since = startMs;
    this.#windowMs = latencyWindowMs;
  }

  record(nowMs: number, request: FinishedRequest): void {
    this.recordSummary(nowMs, {
      requests: 1,
      inputTokens: request.inputTokens,
      outputTokens: request.outputTokens,
      cachedTokens: Math.min(request.cachedTokens, request.inputTokens),
      ttftMsSum: request.ttftMs ?? 0,
      ttftCount: request.ttftMs === undefined ? 0 : 1,
      itlMsSum: request.itlMs ?? 0,
      itlCount: request.itlMs === undefined ? 0 : 1,
    });
  }

  /** Several requests at once, e.g. a frontend's traffic report; their latencies count as finished now. */
  recordSummary(nowMs: number, summary: TrafficSummary): void {
    if (summary.arrivals !== undefined) this.arrived(summary.arrivals);
    this.#count += summary.requests;
    this.#input += summary.inputTokens;
    this.#output += summary.outputTokens;
    this.#cached += Math.min(summary.cachedTokens, summary.inputTokens);
    const { ttftMsSum, ttftCount, itlMsSum, itlCount, workers } = summary;
    if (this.#windowMs !== undefined && (ttftCount > 0 || itlCount > 0))
      this.#recent.push({ at: nowMs, ttftMsSum, ttftCount, itlMsSum, itlCount, workers });
    this.#trim(nowMs);
  }

  /** `count` requests arrived (served or not): from the first call on, the interval's rate counts arrivals. */
  arrived(count = 1): void {
    this.#countsArrivals = true;
    this.#arrivals += count;
  }

  /** The interval since the previous call; the next one starts now. */
  takeInterval(nowMs: number): IntervalLoad {
    const seconds = Math.max(1e-9, (nowMs - this.#since) / 1000);
    const n = this.#count;
    const load: IntervalLoad = {
      requestsPerSecond: (this.#countsArrivals ? this.#arrivals : n) / seconds,
      meanInputTokens: n > 0 ? this.#input / n : 0,
      meanOutputTokens: n > 0 ? this.#output / n : 0,
      kvHitRate: this.#input > 0 ? this.#cached / this.#input : 0,
    };
    this.#since = nowMs;
    this.#arrivals = 0;
    this.#count = 0;
    this.#input = 0;
    this.#output = 0;
    this.#cached = 0;
    return load;
  }

  /** Mean TTFT and ITL of the requests finished within the latency window; undefined when none. */
  measured(nowMs: number): WorkerLatencyEstimate | undefined {
    this.#trim(nowMs);
    let ttftSum = 0;
    let ttftCount = 0;
    let itlSum = 0;
    let itlCount = 0;
    for (const r of this.#recent) {
      ttftSum += r.ttftMsSum;
      ttftCount += r.ttftCount;
      itlSum += r.itlMsSum;
      itlCount += r.itlCount;
    }
    if (ttftCount === 0 && itlCount === 0) return undefined;
    return { ttftMs: ttftCount > 0 ? ttftSum / ttftCount : 0, itlMs: itlCount > 0 ? itlSum / itlCount : 0 };
  }

  /**
   * One estimate per worker of `workerIds`, in that order: the mean TTFT and ITL of the requests the
   * window's reports credit to it; a worker with none reads as 0 ms (it has room). Undefined when
   * the reports in the window name no worker (frontends older than per-worker sums): then
   * `measured` is all there is.
   */
  measuredPerWorker(nowMs: number, workerIds: readonly string[]): WorkerLatencyEstimate[] | undefined {
    this.#trim(nowMs);
    const sums = new Map<string, { ttftMsSum: number; ttftCount: number; itlMsSum: number; itlCount: number }>();
    let named = false;
    for (const r of this.#recent) {
      for (const w of r.workers ?? []) {
        named = true;
        const s = sums.get(w.workerId) ?? { ttftMsSum: 0, ttftCount: 0, itlMsSum: 0, itlCount: 0 };
        s.ttftMsSum += w.ttftMsSum;
        s.ttftCount += w.ttftCount;
        s.itlMsSum += w.itlMsSum;
        s.itlCount += w.itlCount;
        sums.set(w.workerId, s);
      }
    }
    if (!named) return undefined;
    return workerIds.map((id) => {
      const s = sums.get(id);
      return {
        ttftMs: s && s.ttftCount > 0 ? s.ttftMsSum / s.ttftCount : 0,
        itlMs: s && s.itlCount > 0 ? s.itlMsSum / s.itlCount : 0,
      };
    });
  }

  #trim(nowMs: number): void {
    const oldest = nowMs - (this.#windowMs ?? 0);
    while (this.#recent.length > 0 && (this.#recent[0]?.at ?? nowMs) < oldest) this.#recent.shift();
  }
}
