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

/** Latency samples of one worker within the window, with running sums for an O(1) mean. */
class WindowedSamples {
  #at: number[] = [];
  #values: number[] = [];
  #head = 0;
  #sum = 0;

  push(atMs: number, value: number): void {
    this.#at.push(atMs);
    this.#values.push(value);
    this.#sum += value;
  }

  /** Drops samples taken before `oldestMs`. */
  trim(oldestMs: number): void {
    while (this.#head < this.#at.length && (this.#at[this.#head] as number) < oldestMs) {
      this.#sum -= this.#values[this.#head] as number;
      this.#head++;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#at.length) {
      this.#at = this.#at.slice(this.#head);
      this.#values = this.#values.slice(this.#head);
      this.#head = 0;
    }
    if (this.#head === this.#at.length) this.#sum = 0; // no drift from float sums once empty
  }

  get count(): number {
    return this.#at.length - this.#head;
  }

  get sum(): number {
    return this.#sum;
  }
}

class Request implements TrackedRequest {
  readonly startedMs: number;
  ttftWorker: string | undefined;
  itlWorker: string | undefined;
  firstMs = -1;
  lastMs = -1;
  count = 0;
  readonly #owner: LiveLatency;

  constructor(owner: LiveLatency, startedMs: number) {
    this.#owner = owner;
    this.startedMs = startedMs;
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
  readonly #running = new Set<Request>();
  readonly #ttft = new Map<string, WindowedSamples>();
  readonly #itl = new Map<string, WindowedSamples>();

  /** `windowMs`: how long a finished request's latencies count. */
  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /** Follows a request that arrived at `nowMs`. */
  begin(nowMs: number): TrackedRequest {
    const request = new Request(this, nowMs);
    this.#running.add(request);
    return request;
  }

  /** Requests begun and not yet ended. */
  get running(): number {
    return this.#running.size;
  }

  /** @internal A request's end, from `TrackedRequest.end`. */
  ended(request: Request, nowMs: number): void {
    if (!this.#running.delete(request)) return;
    if (request.firstMs < 0 || request.itlWorker === undefined || request.ttftWorker === undefined) return;
    samples(this.#ttft, request.ttftWorker).push(nowMs, request.firstMs - request.startedMs);
    if (request.count > 1) {
      samples(this.#itl, request.itlWorker).push(nowMs, (request.lastMs - request.firstMs) / (request.count - 1));
    }
  }

  /** One estimate per worker of `workerIds`, in that order, at `nowMs`. */
  estimates(nowMs: number, workerIds: readonly string[]): WorkerLatencyEstimate[] {
    const oldest = nowMs - this.#windowMs;
    const sums = new Map<string, { ttft: number; ttftN: number; itl: number; itlN: number }>();
    for (const id of workerIds) {
      const ttft = this.#ttft.get(id);
      const itl = this.#itl.get(id);
      ttft?.trim(oldest);
      itl?.trim(oldest);
      sums.set(id, { ttft: ttft?.sum ?? 0, ttftN: ttft?.count ?? 0, itl: itl?.sum ?? 0, itlN: itl?.count ?? 0 });
    }
    for (const request of this.#running) {
      if (request.firstMs < 0) {
        const age = nowMs - request.startedMs;
        if (request.ttftWorker === undefined) {
          for (const sum of sums.values()) {
            sum.ttft += age;
            sum.ttftN++;
          }
        } else {
          const sum = sums.get(request.ttftWorker);
          if (sum) {
            sum.ttft += age;
            sum.ttftN++;
          }
        }
        continue;
      }
      if (request.count < 2 || request.itlWorker === undefined) continue;
      const sum = sums.get(request.itlWorker);
      if (!sum) continue;
      const mean = (request.lastMs - request.firstMs) / (request.count - 1);
      sum.itl += Math.max(mean, (nowMs - request.firstMs) / request.count);
      sum.itlN++;
    }
    return workerIds.map((id) => {
      const sum = sums.get(id)!;
      return { ttftMs: sum.ttftN > 0 ? sum.ttft / sum.ttftN : 0, itlMs: sum.itlN > 0 ? sum.itl / sum.itlN : 0 };
    });
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
