import type { FinishedRequestTimings, RoutingDecision } from "../frontend-metrics.js";

export interface RequestWindowOptions {
  /** Milliseconds since the epoch. Default `Date.now`. */
  readonly now?: () => number;
  /** Width of one bucket of the window. Default 5 s. */
  readonly bucketMs?: number;
  /** How far back the window reaches. Default 5 min. */
  readonly spanMs?: number;
  /** Latencies kept per bucket (a uniform sample beyond). Default 512. */
  readonly samplesPerBucket?: number;
  /** Routing decisions kept for `recentRoutes`. Default 20. */
  readonly recentRoutes?: number;
  /** Draws the sample a latency replaces once a bucket is full. Default `Math.random`. */
  readonly random?: () => number;
}

/** p50, p90 and p99 of some latencies, ms (nearest rank: the ⌈p·n⌉-th smallest). */
export interface Percentiles {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
}

/** A routing decision with when the frontend heard it. */
export interface RecentRoute extends RoutingDecision {
  readonly atMs: number;
}

/** The requests that finished (and were routed) in the last `windowSeconds`. */
export interface WindowSummary {
  readonly windowSeconds: number;
  readonly requests: number;
  readonly errors: number;
  readonly requestsPerSecond: number;
  readonly outputTokensPerSecond: number;
  readonly ttftMs: Percentiles | null;
  readonly itlMs: Percentiles | null;
  /** Shares of the successful requests' prompt tokens: cached on the device, loaded back from lower tiers. */
  readonly cachedShare: { readonly device: number; readonly lowerTiers: number } | null;
  /** Share of routed prompt tokens the chosen worker held, as the KV router saw it. */
  readonly routerOverlapShare: number | null;
  readonly routed: number;
  /** Routed requests whose prefill ran on a prefill worker, per second. */
  readonly disaggregatedPerSecond: number;
  /** Requests routed to each worker, and the share of their prompts it held. */
  readonly byWorker: Readonly<Record<string, { readonly requests: number; readonly overlapShare: number | null }>>;
}

/** One bucket of the window, for the charts. */
export interface SeriesPoint {
  /** Start of the bucket, seconds since the epoch. */
  readonly t: number;
  readonly requestsPerSecond: number;
  readonly outputTokensPerSecond: number;
  readonly ttftP50Ms: number | null;
  readonly ttftP99Ms: number | null;
  readonly itlP50Ms: number | null;
  readonly itlP99Ms: number | null;
}

interface WorkerTally {
  requests: number;
  overlapTokens: number;
  knownPromptTokens: number;
}

interface Bucket {
  readonly startMs: number;
  requests: number;
  errors: number;
  outputTokens: number;
  promptTokens: number;
  cachedTokens: number;
  lowerTierCachedTokens: number;
  readonly ttft: Sample;
  readonly itl: Sample;
  routed: number;
  disaggregated: number;
  readonly workers: Map<string, WorkerTally>;
}

/** A bounded uniform sample (reservoir) of one bucket's latencies. */
interface Sample {
  readonly values: number[];
  seen: number;
}

/**
 * The frontend's recent traffic, in fixed buckets over a few minutes: requests, errors, tokens,
 * TTFT and inter-token latency samples, cache shares and routing decisions, fed by the requests
 * the frontend finishes and routes. Memory is bounded by the span, not the request rate.
 */
export class RequestWindow {
  readonly #now: () => number;
  readonly #bucketMs: number;
  readonly #spanMs: number;
  readonly #cap: number;
  readonly #random: () => number;
  readonly #recentLimit: number;
  readonly #buckets: Bucket[] = [];
  readonly #recent: RecentRoute[] = [];
  readonly #startedAt: number;

  constructor(options: RequestWindowOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#bucketMs = options.bucketMs ?? 5_000;
    this.#spanMs = options.spanMs ?? 300_000;
    this.#cap = options.samplesPerBucket ?? 512;
    this.#random = options.random ?? Math.random;
    this.#recentLimit = options.recentRoutes ?? 20;
    this.#startedAt = this.#now();
  }

  recordFinished(request: FinishedRequestTimings): void {
    const bucket = this.#current();
    bucket.requests++;
    if (request.status === "error") bucket.errors++;
    bucket.outputTokens += request.outputTokens ?? 0;
    if (request.status === "success" && request.inputTokens) {
      bucket.promptTokens += request.inputTokens;
      bucket.cachedTokens += request.cachedTokens ?? 0;
      bucket.lowerTierCachedTokens += request.hostCachedTokens ?? 0;
    }
    if (request.ttftMs !== undefined) this.#add(bucket.ttft, request.ttftMs);
    if (request.itlMs !== undefined) this.#add(bucket.itl, request.itlMs);
  }

  recordRouted(decision: RoutingDecision): void {
    const bucket = this.#current();
    bucket.routed++;
    if (decision.prefillWorkerId !== undefined) bucket.disaggregated++;
    let tally = bucket.workers.get(decision.workerId);
    if (!tally) {
      tally = { requests: 0, overlapTokens: 0, knownPromptTokens: 0 };
      bucket.workers.set(decision.workerId, tally);
    }
    tally.requests++;
    if (decision.overlapBlocks !== undefined) {
      tally.overlapTokens += Math.min(decision.promptTokens, decision.overlapBlocks * decision.blockSize);
      tally.knownPromptTokens += decision.promptTokens;
    }
    this.#recent.push({ ...decision, atMs: this.#now() });
    if (this.#recent.length > this.#recentLimit) this.#recent.shift();
  }

  /** The last routing decisions, newest first. */
  recentRoutes(): RecentRoute[] {
    return [...this.#recent].reverse();
  }

  /** The buckets that started within the last `lastMs` (the current one included), summed. */
  summary(lastMs = 60_000): WindowSummary {
    const now = this.#now();
    const from = this.#align(now) - lastMs + this.#bucketMs;
    const buckets = this.#buckets.filter((b) => b.startMs >= from);
    const seconds = Math.max(1, now - Math.max(from, this.#startedAt)) / 1000;
    const sum = (pick: (b: Bucket) => number): number => buckets.reduce((total, b) => total + pick(b), 0);
    const prompt = sum((b) => b.promptTokens);
    const lowerTiers = sum((b) => b.lowerTierCachedTokens);
    const byWorker: Record<string, { requests: number; overlapShare: number | null }> = {};
    let overlap = 0;
    let known = 0;
    for (const [id, tally] of mergeWorkers(buckets)) {
      overlap += tally.overlapTokens;
      known += tally.knownPromptTokens;
      byWorker[id] = {
        requests: tally.requests,
        overlapShare: tally.knownPromptTokens > 0 ? tally.overlapTokens / tally.knownPromptTokens : null,
      };
    }
    return {
      windowSeconds: lastMs / 1000,
      requests: sum((b) => b.requests),
      errors: sum((b) => b.errors),
      requestsPerSecond: sum((b) => b.requests) / seconds,
      outputTokensPerSecond: sum((b) => b.outputTokens) / seconds,
      ttftMs: percentiles(buckets.flatMap((b) => b.ttft.values)),
      itlMs: percentiles(buckets.flatMap((b) => b.itl.values)),
      cachedShare:
        prompt > 0 ? { device: (sum((b) => b.cachedTokens) - lowerTiers) / prompt, lowerTiers: lowerTiers / prompt } : null,
      routerOverlapShare: known > 0 ? overlap / known : null,
      routed: sum((b) => b.routed),
      disaggregatedPerSecond: sum((b) => b.disaggregated) / seconds,
      byWorker,
    };
  }

  /** One point per bucket over the span (since the window started), oldest first; empty buckets read 0 and null. */
  series(): SeriesPoint[] {
    const now = this.#now();
    const last = this.#align(now);
    const first = Math.max(this.#align(this.#startedAt), last - this.#spanMs + this.#bucketMs);
    const byStart = new Map(this.#buckets.map((b) => [b.startMs, b]));
    const points: SeriesPoint[] = [];
    for (let start = first; start <= last; start += this.#bucketMs) {
      const b = byStart.get(start);
      const seconds = Math.max(1, Math.min(now, start + this.#bucketMs) - Math.max(start, this.#startedAt)) / 1000;
      const ttft = b ? percentiles(b.ttft.values) : null;
      const itl = b ? percentiles(b.itl.values) : null;
      points.push({
        t: start / 1000,
        requestsPerSecond: (b?.requests ?? 0) / seconds,
        outputTokensPerSecond: (b?.outputTokens ?? 0) / seconds,
        ttftP50Ms: ttft?.p50 ?? null,
        ttftP99Ms: ttft?.p99 ?? null,
        itlP50Ms: itl?.p50 ?? null,
        itlP99Ms: itl?.p99 ?? null,
      });
    }
    return points;
  }

  #align(ms: number): number {
    return Math.floor(ms / this.#bucketMs) * this.#bucketMs;
  }

  /** The bucket of now, after dropping those older than the span. */
  #current(): Bucket {
    const start = this.#align(this.#now());
    const tail = this.#buckets.at(-1);
    if (tail && tail.startMs >= start) return tail;
    while (this.#buckets.length > 0 && (this.#buckets[0] as Bucket).startMs <= start - this.#spanMs) this.#buckets.shift();
    const bucket: Bucket = {
      startMs: start,
      requests: 0,
      errors: 0,
      outputTokens: 0,
      promptTokens: 0,
      cachedTokens: 0,
      lowerTierCachedTokens: 0,
      ttft: { values: [], seen: 0 },
      itl: { values: [], seen: 0 },
      routed: 0,
      disaggregated: 0,
      workers: new Map(),
    };
    this.#buckets.push(bucket);
    return bucket;
  }

  #add(sample: Sample, value: number): void {
    sample.seen++;
    if (sample.values.length < this.#cap) {
      sample.values.push(value);
      return;
    }
    const slot = Math.floor(this.#random() * sample.seen);
    if (slot < this.#cap) sample.values[slot] = value;
  }
}

function mergeWorkers(buckets: readonly Bucket[]): Map<string, WorkerTally> {
  const merged = new Map<string, WorkerTally>();
  for (const bucket of buckets) {
    for (const [id, tally] of bucket.workers) {
      const into = merged.get(id) ?? { requests: 0, overlapTokens: 0, knownPromptTokens: 0 };
      into.requests += tally.requests;
      into.overlapTokens += tally.overlapTokens;
      into.knownPromptTokens += tally.knownPromptTokens;
      merged.set(id, into);
    }
  }
  return merged;
}

/** Nearest-rank percentiles; null for no values. */
export function percentiles(values: readonly number[]): Percentiles | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number): number => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] as number;
  return { p50: rank(0.5), p90: rank(0.9), p99: rank(0.99) };
}
