import type { TierCounts } from "../engines/index.js";
import { type Summary, summarize } from "./latency-stats.js";

/** Latency targets a request must meet to count towards goodput. */
export interface ServiceLevel {
  readonly ttftMs?: number | undefined;
  readonly itlMs?: number | undefined;
}

/** What happened to one priority class of a replay's requests. */
export interface PriorityClassResult {
  readonly priority: number;
  readonly requests: number;
  readonly completed: number;
  /** Refused or shed by the router (queue full, displaced by a more urgent request, deadline out of reach). */
  readonly rejected: number;
  readonly ttft_ms: Summary;
  /** Share of the class's requests that completed within every SLO target. */
  readonly slo_attainment: number;
}

interface ClassTally {
  requests: number;
  completed: number;
  rejected: number;
  readonly ttft: number[];
  withinSlo: number;
}

/** What happened to the replayed requests: latencies, cache hits, output and goodput. */
export class ReplayRecorder {
  readonly ttft: number[];
  readonly #itl: number[] = [];
  readonly #slo: ServiceLevel;
  promptTokens = 0;
  cachedTokens = 0;
  hostCachedTokens = 0;
  diskCachedTokens = 0;
  objectCachedTokens = 0;
  outputTokens = 0;
  completed = 0;
  #withinSlo = 0;
  /** Requests prefilled on a prefill worker, and those prefilled where they decoded. */
  remotePrefills = 0;
  localPrefills = 0;
  /** Requests the router refused or shed: queue full, displaced, or deadline out of reach (HTTP 503). */
  rejected = 0;
  /** The same counts per priority class (absent priority: 0). */
  readonly #classes = new Map<number, ClassTally>();
  /** Prompt tokens each request took from each lower tier, until it completes. */
  readonly #tierHits = new Map<string, Readonly<TierCounts>>();

  constructor(slo: ServiceLevel, ttftSink?: number[]) {
    this.#slo = slo;
    this.ttft = ttftSink ?? [];
  }

  /** What a request took from each lower tier (an engine reports it as the request ends). */
  noteTierHits(requestId: string, tokens: Readonly<TierCounts>): void {
    this.#tierHits.set(requestId, tokens);
  }

  /**
   * One completed request: its TTFT, mean ITL (undefined with one token) and token counts. Its
   * lower-tier tokens are those noted for `requestId`; without a note, the host's are
   * `hostCachedTokens`.
   */
  complete(r: {
    requestId?: string | undefined;
    priority?: number | undefined;
    ttftMs: number;
    itlMs: number | undefined;
    promptTokens: number;
    cachedTokens: number;
    hostCachedTokens?: number | undefined;
    outputTokens: number;
  }): void {
    this.completed++;
    this.promptTokens += r.promptTokens;
    this.cachedTokens += r.cachedTokens;
    const tiers = r.requestId === undefined ? undefined : this.#tierHits.get(r.requestId);
    if (r.requestId !== undefined) this.#tierHits.delete(r.requestId);
    this.hostCachedTokens += tiers ? tiers.host : (r.hostCachedTokens ?? 0);
    this.diskCachedTokens += tiers?.disk ?? 0;
    this.objectCachedTokens += tiers?.object ?? 0;
    this.outputTokens += r.outputTokens;
    this.ttft.push(r.ttftMs);
    if (r.itlMs !== undefined) this.#itl.push(r.itlMs);
    const ttftOk = this.#slo.ttftMs === undefined || r.ttftMs <= this.#slo.ttftMs;
    const itlOk = this.#slo.itlMs === undefined || r.itlMs === undefined || r.itlMs <= this.#slo.itlMs;
    const tally = this.#class(r.priority);
    tally.completed++;
    tally.ttft.push(r.ttftMs);
    if (ttftOk && itlOk) {
      this.#withinSlo++;
      tally.withinSlo++;
    }
  }

  /** A request of `priority` arrived. */
  arrive(priority: number | undefined): void {
    this.#class(priority).requests++;
  }

  /** The router refused or shed a request of `priority`. */
  reject(priority: number | undefined): void {
    this.rejected++;
    this.#class(priority).rejected++;
  }

  /** Each priority class that arrived, most urgent first. */
  get classes(): PriorityClassResult[] {
    return [...this.#classes.entries()]
      .sort(([a], [b]) => a - b)
      .map(([priority, t]) => ({
        priority,
        requests: t.requests,
        completed: t.completed,
        rejected: t.rejected,
        ttft_ms: summarize(t.ttft),
        slo_attainment: t.requests === 0 ? 0 : t.withinSlo / t.requests,
      }));
  }

  #class(priority: number | undefined): ClassTally {
    const key = priority ?? 0;
    let tally = this.#classes.get(key);
    if (!tally) {
      tally = { requests: 0, completed: 0, rejected: 0, ttft: [], withinSlo: 0 };
      this.#classes.set(key, tally);
    }
    return tally;
  }

  get hitRate(): number {
    return this.promptTokens === 0 ? 0 : this.cachedTokens / this.promptTokens;
  }

  /** The part of the hit rate served from host tiers. */
  get hostHitRate(): number {
    return this.promptTokens === 0 ? 0 : this.hostCachedTokens / this.promptTokens;
  }

  /** The part of the hit rate served from disk tiers. */
  get diskHitRate(): number {
    return this.promptTokens === 0 ? 0 : this.diskCachedTokens / this.promptTokens;
  }

  /** The part of the hit rate served from the object tier. */
  get objectHitRate(): number {
    return this.promptTokens === 0 ? 0 : this.objectCachedTokens / this.promptTokens;
  }

  get ttftSummary(): Summary {
    return summarize(this.ttft);
  }

  get itlSummary(): Summary {
    return summarize(this.#itl);
  }

  /** Completed requests that met every target. */
  get withinSlo(): number {
    return this.#withinSlo;
  }
}
