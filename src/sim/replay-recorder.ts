import type { TierCounts } from "../engines/index.js";
import { type Summary, summarize } from "./latency-stats.js";

/** Latency targets a request must meet to count towards goodput. */
export interface ServiceLevel {
  readonly ttftMs?: number | undefined;
  readonly itlMs?: number | undefined;
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
  /** Requests the router refused because every worker was busy and its queue was full (HTTP 503). */
  rejected = 0;
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
    if (ttftOk && itlOk) this.#withinSlo++;
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
