import type { Logger } from "../../observability/index.js";
import type { KvEvent, KvEventBatch } from "../../protocol/index.js";
import type { Runtime, Unsubscribe } from "../../runtime/index.js";
import { subjects } from "../../worker/index.js";
import { type ApplyStatus, type OverlapScores, RadixTree } from "./radix-tree.js";

export interface KvIndexerOptions {
  /** Where events and worker departures come from; absent when the caller applies events itself (replay). */
  readonly runtime?: Runtime;
  readonly logger: Logger;
  /** Block size the router hashes with; events of another size are refused loudly. */
  readonly blockSize: number;
}

/** Counts of applied events, by event type and status (Dynamo's `kv_cache_events_applied`). */
export type AppliedCounts = Map<`${KvEvent["type"]}:${ApplyStatus | "block_size_mismatch"}`, number>;

/**
 * Feeds a radix tree from the workers' KV events on the event plane and drops a worker's blocks
 * when it leaves discovery. Numbers each worker's batches: a gap is reported (the blocks in the
 * lost batches are unknown until the worker re-sends them).
 */
export class KvIndexer {
  readonly tree = new RadixTree();
  readonly applied: AppliedCounts = new Map();
  readonly #lastEventId = new Map<string, number>();
  readonly #stops: Unsubscribe[] = [];
  readonly #log: Logger;
  readonly #blockSize: number;
  readonly #warnedSizes = new Set<string>();

  constructor(options: KvIndexerOptions) {
    this.#log = options.logger.child({ component: "kv-indexer" });
    this.#blockSize = options.blockSize;
    const runtime = options.runtime;
    if (runtime) {
      this.#stops.push(
        runtime.events.subscribe(subjects.allKvEvents, (payload) => this.apply(payload as KvEventBatch)),
        runtime.discovery.watch((event) => {
          if (event.type === "instance-removed") this.removeWorker(event.instanceId);
        }),
      );
    }
  }

  /** Applies one batch of a worker's events, in order. */
  apply(batch: KvEventBatch): void {
    const last = this.#lastEventId.get(batch.workerId);
    if (last !== undefined && batch.eventId > last + 1) {
      this.#log.warn(
        { workerId: batch.workerId, expected: last + 1, got: batch.eventId },
        "KV events from this worker were lost; routing may miss some of its cached blocks",
      );
    }
    this.#lastEventId.set(batch.workerId, batch.eventId);
    for (const event of batch.events) this.#count(event.type, this.#applyOne(batch.workerId, event));
  }

  findMatches(localHashes: readonly bigint[]): OverlapScores {
    return this.tree.findMatches(localHashes);
  }

  removeWorker(workerId: string): void {
    this.tree.removeWorker(workerId);
    this.#lastEventId.delete(workerId);
  }

  close(): void {
    for (const stop of this.#stops) stop();
  }

  #applyOne(workerId: string, event: KvEvent): ApplyStatus | "block_size_mismatch" {
    switch (event.type) {
      case "kv-block-stored":
        if (event.blockSize !== this.#blockSize) {
          if (!this.#warnedSizes.has(workerId)) {
            this.#warnedSizes.add(workerId);
            this.#log.error(
              { workerId, workerBlockSize: event.blockSize, routerBlockSize: this.#blockSize },
              "worker KV block size differs from the router's; its events are ignored. Start every worker of a model with the same --block-size",
            );
          }
          return "block_size_mismatch";
        }
        return this.tree.applyStored(workerId, event);
      case "kv-block-removed":
        return this.tree.applyRemoved(workerId, event.blockHashes);
      case "kv-cache-cleared":
        this.tree.removeWorker(workerId);
        return "ok";
    }
  }

  #count(type: KvEvent["type"], status: ApplyStatus | "block_size_mismatch"): void {
    const key = `${type}:${status}` as const;
    this.applied.set(key, (this.applied.get(key) ?? 0) + 1);
  }
}
