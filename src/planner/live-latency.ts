import type { WorkerLatencyEstimate } from "./latency-estimate.js";

/** One request as the planner follows it from its arrival (admission queue included) to its end. */
export interface TrackedRequest {
  /** Where the router sent it: `prefillWorkerId` (when split) owns its TTFT, `workerId` its ITL. */
  routed(workerId: string, prefillWorkerId?: string): void;
  /** `count` tokens arrived at `nowMs` (the clock `begin` was given). */
  tokens(nowMs: number, count: number): void;
  /** It ended at `nowMs`; a request that ended without a token leaves no sample. */
  end(nowMs: number): void;
}

/** Latency samples of one worker, oldest first, dropped as they leave the window. */
class WindowedSamples {
  #at: number[] = [];
  #values: number[] = [];
  #head = 0;

  push(atMs: number, value: number): void {
    this.#at.push(atMs);
    this.#values.push(value);
  }

  /** Drops samples taken before `oldestMs`. */
  trim(oldestMs: number): void {
    while (this.#head < this.#at.length && (this.#at[this.#head] as number) < oldestMs) this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#at.length) {
      this.#at = this.#at.slice(this.#head);
      this.#values = this.#values.slice(this.#head);
      this.#head = 0;
    }
  }

  /** The samples within the window, appended to `into`. */
  collect(into: number[]): void {
    for (let i = this.#head; i < this.#values.length; i++) into.push(this.#values[i] as number);
  }
}

class Request implements TrackedRequest {
  readonly startedMs: number;
  /** It arrived at a pool woken from zero: its wait was the start-up's. */
  readonly coldStart: boolean;
  ttftWorker: string | undefined;
  itlWorker: string | undefined;
  firstMs = -1;
  lastMs = -1;
  count = 0;
  readonly #owner: LiveLatency;

  constructor(owner: LiveLatency, startedMs: number, coldStart: boolean) {
    this.#owner = owner;
    this.startedMs = startedMs;
    this.coldStart = coldStart;
  }

  routed(workerId: string, prefillWorkerId?: string): void {
    this.itlWorker = workerId;
    this.ttftWorker = prefillWorkerId ?? workerId;
  }

  tokens(nowMs: number, count: number): void {
    if (count <= 0) return;
    if (this.firstMs < 0) this.firstMs = nowMs;
    this.lastMs = nowMs;
    this.count += count;
  }

  end(nowMs: number): void {
    this.#owner.ended(this, nowMs);
  }
}

/**
 * The load loop's measured latencies, per worker and live: the TTFT and ITL of the requests that
 * finished within the window, and of the requests still running, each counted on the worker it
 * went to. A request still waiting for its first token counts with its age so far (a lower bound of
 * its TTFT, queue time included), so a queue that grows shows at once, before any request behind
 * it finishes; one waiting in the admission queue, not yet routed, counts on every worker. A stream
 * counts with its mean gap so far, or with the gap it is waiting in when that is longer. A worker
 * with neither reads as 0 ms: it has room.
 */
export class LiveLatency {
  readonly #windowMs: number;
  readonly #quantile: number | undefined;
  readonly #running = new Set<Request>();
  readonly #ttft = new Map<string, WindowedSamples>();
  readonly #itl = new Map<string, WindowedSamples>();
  /** When a request last began or ended. */
  #lastActivityMs: number | undefined;

  /**
   * `windowMs`: how long a finished request's latencies count. `quantile`: the estimate is this
   * quantile of a worker's samples (0.9: the latency 90% of them stay within); the mean without it.
   */
  constructor(windowMs: number, quantile?: number) {
    this.#windowMs = windowMs;
    this.#quantile = quantile;
  }

  /**
   * Follows a request that arrived at `nowMs`. One that meets a cold start (`coldStart`: its pool
   * was woken from zero) counts for its ITL only: its TTFT is the start-up's, not the load's.
   */
  begin(nowMs: number, coldStart = false): TrackedRequest {
    const request = new Request(this, nowMs, coldStart);
    this.#running.add(request);
    this.#lastActivityMs = Math.max(this.#lastActivityMs ?? nowMs, nowMs);
    return request;
  }

  /** How long no request has run (ms): 0 while one does, else since the last ended (or `sinceMs`, before any began). */
  idleMs(nowMs: number, sinceMs: number): number {
    if (this.#running.size > 0) return 0;
    return Math.max(0, nowMs - (this.#lastActivityMs ?? sinceMs));
  }

  /** Requests begun and not yet ended. */
  get running(): number {
    return this.#running.size;
  }

  /** @internal A request's end, from `TrackedRequest.end`. */
  ended(request: Request, nowMs: number): void {
    if (!this.#running.delete(request)) return;
    this.#lastActivityMs = Math.max(this.#lastActivityMs ?? nowMs, nowMs);
    if (request.firstMs < 0 || request.itlWorker === undefined || request.ttftWorker === undefined) return;
    if (!request.coldStart) samples(this.#ttft, request.ttftWorker).push(nowMs, request.firstMs - request.startedMs);
    if (request.count > 1) {
      samples(this.#itl, request.itlWorker).push(nowMs, (request.lastMs - request.firstMs) / (request.count - 1));
    }
  }

  /** One estimate per worker of `workerIds`, in that order, at `nowMs`. */
  estimates(nowMs: number, workerIds: readonly string[]): WorkerLatencyEstimate[] {
    const oldest = nowMs - this.#windowMs;
    const values = new Map<string, { ttft: number[]; itl: number[] }>();
    for (const id of workerIds) {
      const ttft: number[] = [];
      const itl: number[] = [];
      for (const [map, into] of [
        [this.#ttft, ttft],
        [this.#itl, itl],
      ] as const) {
        const samples = map.get(id);
        samples?.trim(oldest);
        samples?.collect(into);
      }
      values.set(id, { ttft, itl });
    }
    for (const request of this.#running) {
      if (request.firstMs < 0) {
        if (request.coldStart) continue;
        const age = nowMs - request.startedMs;
        if (request.ttftWorker === undefined) for (const v of values.values()) v.ttft.push(age);
        else values.get(request.ttftWorker)?.ttft.push(age);
        continue;
      }
      if (request.count < 2 || request.itlWorker === undefined) continue;
      const mean = (request.lastMs - request.firstMs) / (request.count - 1);
      values.get(request.itlWorker)?.itl.push(Math.max(mean, (nowMs - request.firstMs) / request.count));
    }
    return workerIds.map((id) => {
      const v = values.get(id)!;
      return { ttftMs: this.#statistic(v.ttft), itlMs: this.#statistic(v.itl) };
    });
  }

  #statistic(values: number[]): number {
    if (values.length === 0) return 0;
    if (this.#quantile === undefined) return values.reduce((a, b) => a + b, 0) / values.length;
    values.sort((a, b) => a - b);
    return values[Math.min(values.length - 1, Math.floor(this.#quantile * values.length))] as number;
  }

  /** Forgets the finished samples of workers that left. */
  forget(workerId: string): void {
    this.#ttft.delete(workerId);
    this.#itl.delete(workerId);
  }
}

function samples(map: Map<string, WindowedSamples>, id: string): WindowedSamples {
  let found = map.get(id);
  if (!found) {
    found = new WindowedSamples();
    map.set(id, found);
  }
  return found;
}
