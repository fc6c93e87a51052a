import type { FinishedRequestTimings } from "../frontend/index.js";
import type { Logger } from "../observability/index.js";
import { MAX_REPORTED_WORKERS, subjects, type TrafficReport, type WorkerLatencySums } from "../protocol/index.js";
import type { Clock, EventPlane } from "../runtime/index.js";

export interface TrafficReporterOptions {
  /** Names the subject (`armature.traffic.<frontendId>`): one NATS subject token. */
  readonly frontendId: string;
  readonly events: EventPlane;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How often the sums go out. Default 1000 ms. */
  readonly periodMs?: number;
}

type Sums = { -readonly [K in keyof Omit<TrafficReport, "type" | "frontendId" | "workers">]-?: number };
type WorkerSums = { -readonly [K in keyof Omit<WorkerLatencySums, "workerId">]: number };

const empty = (): Sums => ({
  requests: 0,
  arrivals: 0,
  inputTokens: 0,
  outputTokens: 0,
  cachedTokens: 0,
  ttftMsSum: 0,
  ttftCount: 0,
  itlMsSum: 0,
  itlCount: 0,
});

/**
 * A distributed frontend's side of `armature planner`: counts the requests that arrive, sums those
 * that finish successfully (and their latencies per worker) and publishes them as one
 * `traffic-report` every period in which any arrived or finished (an idle frontend sends nothing). At-most-once, like every event: a report lost in transit undercounts one second.
 * `close()` stops the timer and sends what the last, partial period holds.
 */
export class TrafficReporter {
  readonly #o: Required<TrafficReporterOptions>;
  readonly #stop = new AbortController();
  readonly #loop: Promise<void>;
  #sums = empty();
  #workers = new Map<string, WorkerSums>();
  #closed = false;
  #warnedAt = Number.NEGATIVE_INFINITY;

  constructor(options: TrafficReporterOptions) {
    this.#o = { periodMs: 1000, ...options };
    this.#loop = this.#run();
  }

  /** Counts one request that arrived (the demand, served or not). */
  arrived(): void {
    if (!this.#closed) this.#sums.arrivals++;
  }

  /** Adds one finished request (failed ones are left out, as the planner judges served traffic). */
  record(request: FinishedRequestTimings): void {
    if (request.status !== "success" || this.#closed) return;
    const input = request.inputTokens ?? 0;
    const s = this.#sums;
    s.requests++;
    s.inputTokens += input;
    s.outputTokens += request.outputTokens ?? 0;
    s.cachedTokens += Math.min(request.cachedTokens ?? 0, input);
    if (request.ttftMs !== undefined) {
      s.ttftMsSum += Math.max(0, request.ttftMs);
      s.ttftCount++;
      const worker = this.#worker(request.prefillWorkerId ?? request.workerId);
      if (worker) {
        worker.ttftMsSum += Math.max(0, request.ttftMs);
        worker.ttftCount++;
      }
    }
    if (request.itlMs !== undefined) {
      s.itlMsSum += Math.max(0, request.itlMs);
      s.itlCount++;
      const worker = this.#worker(request.workerId);
      if (worker) {
        worker.itlMsSum += Math.max(0, request.itlMs);
        worker.itlCount++;
      }
    }
  }

  /** A worker's sums this period; none past `MAX_REPORTED_WORKERS` workers (the pool-wide sums still count). */
  #worker(id: string | undefined): WorkerSums | undefined {
    if (id === undefined) return undefined;
    let sums = this.#workers.get(id);
    if (!sums && this.#workers.size < MAX_REPORTED_WORKERS) {
      sums = { ttftMsSum: 0, ttftCount: 0, itlMsSum: 0, itlCount: 0 };
      this.#workers.set(id, sums);
    }
    return sums;
  }

  /** Stops the timer and publishes the last period's sums. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop.abort();
    await this.#loop;
    await this.#flush();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      try {
        await this.#o.clock.sleep(this.#o.periodMs, signal);
      } catch {
        return;
      }
      await this.#flush();
    }
  }

  async #flush(): Promise<void> {
    const sums = this.#sums;
    if (sums.requests === 0 && sums.arrivals === 0) return;
    const workers = [...this.#workers].map(([workerId, w]) => ({ workerId, ...w }));
    this.#sums = empty();
    this.#workers = new Map();
    const report: TrafficReport = {
      type: "traffic-report",
      frontendId: this.#o.frontendId,
      ...sums,
      ...(workers.length > 0 ? { workers } : {}),
    };
    try {
      await this.#o.events.publish(subjects.trafficReport(this.#o.frontendId), report);
    } catch (error) {
      // A bus outage loses these seconds for the planner; say so at most once a minute.
      const now = this.#o.clock.now();
      if (now - this.#warnedAt >= 60_000) {
        this.#warnedAt = now;
        this.#o.logger.warn({ err: (error as Error).message }, "could not publish a traffic report for the planner");
      }
    }
  }
}
