/**
 * What one frontend finished in about a second, for an `armature planner` process: published on
 * `armature.traffic.<frontendId>` each second in which a request finished (never in
 * `armature serve`, whose planner reads the frontend directly). Sums and counts rather than
 * means, so reports from several frontends and seconds add up.
 */
export interface TrafficReport {
  readonly type: "traffic-report";
  /** The publishing frontend (one NATS subject token). */
  readonly frontendId: string;
  /** Requests that finished successfully in the period. */
  readonly requests: number;
  /**
   * Requests that arrived in the period, served or not: the demand, which an overloaded fleet
   * finishes more slowly than it arrives. Absent from older frontends.
   */
  readonly arrivals?: number | undefined;
  /** Their prompt tokens, completion tokens, and prompt tokens served from a worker's prefix cache. */
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  /** Sum of the time to first token, ms, of the `ttftCount` requests that got a first token. */
  readonly ttftMsSum: number;
  readonly ttftCount: number;
  /** Sum of the mean inter-token latency, ms, of the `itlCount` requests with two tokens or more. */
  readonly itlMsSum: number;
  readonly itlCount: number;
  /**
   * The same latency sums per worker: TTFTs on the worker that prefilled (or served) the request,
   * ITLs on the one that decoded it. Absent from older frontends; at most `MAX_REPORTED_WORKERS`.
   */
  readonly workers?: readonly WorkerLatencySums[] | undefined;
}

/** One worker's share of a traffic report's latency sums. */
export interface WorkerLatencySums {
  readonly workerId: string;
  readonly ttftMsSum: number;
  readonly ttftCount: number;
  readonly itlMsSum: number;
  readonly itlCount: number;
}

/** Workers one traffic report names at most; a frontend that routed to more sends the busiest. */
export const MAX_REPORTED_WORKERS = 1024;
