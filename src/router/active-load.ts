import { type ActiveSequenceEvent, activeSequenceEventSchema, subjects } from "../protocol/index.js";
import { type Clock, type EventPlane, InvalidMessages, type Unsubscribe } from "../runtime/index.js";

/** Load a router has put on a worker and not yet seen finish. */
export interface WorkerLoadShare {
  readonly prefillTokens: number;
  readonly decodeBlocks: number;
}

interface Entry {
  readonly workerId: string;
  prefillTokens: number;
  readonly decodeBlocks: number;
  readonly since: number;
}

export interface ActiveLoadOptions {
  readonly routerId: string;
  readonly clock: Clock;
  /** Share bookings with other router replicas on this event plane. */
  readonly events?: EventPlane | undefined;
  /** Where malformed bookings from other replicas are counted. Default: a private counter. */
  readonly invalidMessages?: InvalidMessages | undefined;
  /** Bookings older than this are dropped as stale. Default 300 s (Dynamo). */
  readonly staleMs?: number;
}

/**
 * Every request in flight with the prefill tokens and KV blocks it puts on its worker: prefill
 * load until the first token, blocks until the end. Replicas of the router publish their changes
 * and apply each other's, so they route as one; a new replica starts from zero.
 */
export class ActiveLoad {
  readonly #o: ActiveLoadOptions;
  readonly #entries = new Map<string, Entry>();
  readonly #perWorker = new Map<string, { prefillTokens: number; decodeBlocks: number }>();
  readonly #stop: Unsubscribe | undefined;
  #lastSweep: number;

  constructor(options: ActiveLoadOptions) {
    this.#o = options;
    this.#lastSweep = options.clock.now();
    const invalid = options.invalidMessages ?? new InvalidMessages();
    this.#stop = options.events?.subscribe(subjects.activeSequences, (payload, subject) => {
      const event = invalid.accept("active-sequence", activeSequenceEventSchema, payload, subject);
      if (event && event.routerId !== options.routerId) this.#apply(`${event.routerId}:${event.requestId}`, event);
    });
  }

  /** Load booked on a worker by every replica. */
  of(workerId: string): WorkerLoadShare {
    this.#sweep();
    return this.#perWorker.get(workerId) ?? { prefillTokens: 0, decodeBlocks: 0 };
  }

  add(requestId: string, workerId: string, prefillTokens: number, decodeBlocks: number): void {
    this.#local({ requestId, workerId, action: "add", prefillTokens, decodeBlocks });
  }

  prefillDone(requestId: string): void {
    const entry = this.#entries.get(`${this.#o.routerId}:${requestId}`);
    if (entry) this.#local({ requestId, workerId: entry.workerId, action: "prefill-done", prefillTokens: 0, decodeBlocks: 0 });
  }

  free(requestId: string): void {
    const entry = this.#entries.get(`${this.#o.routerId}:${requestId}`);
    if (entry) this.#local({ requestId, workerId: entry.workerId, action: "free", prefillTokens: 0, decodeBlocks: 0 });
  }

  close(): void {
    this.#stop?.();
  }

  #local(change: Omit<ActiveSequenceEvent, "type" | "routerId">): void {
    const event: ActiveSequenceEvent = { type: "active-sequence", routerId: this.#o.routerId, ...change };
    this.#apply(`${this.#o.routerId}:${change.requestId}`, event);
    void this.#o.events?.publish(subjects.activeSequences, event).catch(() => {});
  }

  #apply(key: string, event: ActiveSequenceEvent): void {
    const entry = this.#entries.get(key);
    switch (event.action) {
      case "add":
        if (entry) this.#remove(key, entry);
        this.#entries.set(key, {
          workerId: event.workerId,
          prefillTokens: event.prefillTokens,
          decodeBlocks: event.decodeBlocks,
          since: this.#o.clock.now(),
        });
        this.#adjust(event.workerId, event.prefillTokens, event.decodeBlocks);
        return;
      case "prefill-done":
        if (entry && entry.prefillTokens > 0) {
          this.#adjust(entry.workerId, -entry.prefillTokens, 0);
          entry.prefillTokens = 0;
        }
        return;
      case "free":
        if (entry) this.#remove(key, entry);
        return;
    }
  }

  #remove(key: string, entry: Entry): void {
    this.#entries.delete(key);
    this.#adjust(entry.workerId, -entry.prefillTokens, -entry.decodeBlocks);
  }

  #adjust(workerId: string, prefillTokens: number, decodeBlocks: number): void {
    const load = this.#perWorker.get(workerId) ?? { prefillTokens: 0, decodeBlocks: 0 };
    load.prefillTokens += prefillTokens;
    load.decodeBlocks += decodeBlocks;
    if (load.prefillTokens === 0 && load.decodeBlocks === 0) this.#perWorker.delete(workerId);
    else this.#perWorker.set(workerId, load);
  }

  /** Drops bookings older than the stale limit (a replica that died never frees its own). */
  #sweep(): void {
    const now = this.#o.clock.now();
    if (now - this.#lastSweep < 30_000) return;
    this.#lastSweep = now;
    const limit = now - (this.#o.staleMs ?? 300_000);
    for (const [key, entry] of this.#entries) if (entry.since < limit) this.#remove(key, entry);
  }
}
