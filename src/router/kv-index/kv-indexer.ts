import type { Logger } from "../../observability/index.js";
import {
  type KvEvent,
  type KvEventBatch,
  type KvEventsDump,
  type KvEventsQuery,
  kvEventBatchSchema,
  kvRecoverySchema,
  type StorageTier,
  subjects,
  type WorkerLoad,
  workerLoadSchema,
} from "../../protocol/index.js";
import { InvalidMessages, type Runtime, type Unsubscribe } from "../../runtime/index.js";
import { type ApplyStatus, type OverlapScores, RadixTree } from "./radix-tree.js";
import { TierHolders } from "./tier-holders.js";

export interface KvIndexerOptions {
  /** Where events and worker departures come from; absent when the caller applies events itself (replay). */
  readonly runtime?: Runtime;
  readonly logger: Logger;
  /**
   * Block size for a worker discovery has not shown (a replay applying events itself). Each model's
   * size is its workers' (their cards'): the first worker of a model sets it, and the events of a
   * later worker of that model with another size are refused loudly.
   */
  readonly blockSize: number;
  /**
   * Asks a worker for the batches from an event id on (or a dump of its cache). Default, with a
   * runtime: the worker's KV query address on the request plane.
   */
  readonly recover?: ((workerId: string, fromEventId: number) => AsyncIterable<KvEventBatch | KvEventsDump>) | undefined;
  /** Where malformed recovery answers are counted. Default: the runtime's (or a private one). */
  readonly invalidMessages?: InvalidMessages | undefined;
  /** Warn when a worker reports requests in flight but no KV events for this long. Default 30 s. */
  readonly silenceWarningMs?: number;
}

export type RecoveryRequester = NonNullable<KvIndexerOptions["recover"]>;

/** Counts of applied events, by event type and status (Dynamo's `kv_cache_events_applied`). */
export type AppliedCounts = Map<`${KvEvent["type"]}:${ApplyStatus | "block_size_mismatch"}`, number>;

/**
 * Feeds a radix tree from the workers' KV events on the event plane and drops a worker's blocks
 * when it leaves discovery. Blocks on lower storage tiers (a worker's host memory, disk) are indexed
 * apart from the device's, so routing can weigh them (Dynamo 1.0 drops them). Each worker numbers its batches: on a gap (or a worker first seen
 * mid-stream) the indexer asks the worker for what it missed, or for a dump of its whole cache,
 * holding that worker's newer batches until the answer is applied.
 */
export class KvIndexer {
  readonly tree = new RadixTree();
  readonly applied: AppliedCounts = new Map();
  readonly #tiers = new TierHolders();
  readonly #lastEventId = new Map<string, number>();
  readonly #stops: Unsubscribe[] = [];
  readonly #log: Logger;
  readonly #blockSize: number;
  readonly #warnedSizes = new Set<string>();
  /** Each live worker's model, and each model's block size with the workers that hold it. */
  readonly #modelOf = new Map<string, string>();
  readonly #models = new Map<string, { readonly blockSize: number; readonly workers: Set<string> }>();
  readonly #recover: RecoveryRequester | undefined;
  readonly #invalid: InvalidMessages;
  /** The runtime's clock (virtual in a replay), for when events were heard. */
  readonly #now: () => number;
  readonly #held = new Map<string, KvEventBatch[]>();
  /** When each worker's last KV events arrived, and whether its silence was reported. */
  readonly #lastHeard = new Map<string, number>();
  readonly #silenceReported = new Set<string>();
  /** Recoveries started and failed, for diagnostics. */
  readonly recoveries = { started: 0, failed: 0 };
  /** Resolves once kept events (a durable log) are applied; at once without one. */
  readonly ready: Promise<void>;
  /** KV capacity of the workers seen, to size the index's tables ahead of their events. */
  readonly #capacities = new Map<string, number>();
  #capacity = 0;
  /** Live batches that arrive while the kept ones are read, applied after them. */
  #live: KvEventBatch[] | undefined;

  constructor(options: KvIndexerOptions) {
    this.#log = options.logger.child({ component: "kv-indexer" });
    this.#blockSize = options.blockSize;
    const runtime = options.runtime;
    this.#now = runtime ? () => runtime.clock.now() : () => performance.now();
    this.#invalid = options.invalidMessages ?? runtime?.invalidMessages ?? new InvalidMessages();
    this.#recover =
      options.recover ??
      (runtime
        ? (workerId, fromEventId) => {
            const query: KvEventsQuery = { type: "kv-events-query", fromEventId };
            return runtime.requests.call(subjects.kvQuery(workerId), query) as AsyncIterable<KvEventBatch | KvEventsDump>;
          }
        : undefined);
    if (runtime) {
      const silenceMs = options.silenceWarningMs ?? 30_000;
      this.#stops.push(
        runtime.events.subscribe(subjects.allLoad, (payload, subject) => {
          const load = this.#invalid.accept("worker-load", workerLoadSchema, payload, subject);
          if (load) this.#checkSilence(load, runtime.clock.now(), silenceMs);
        }),
        runtime.events.subscribe(subjects.allKvEvents, (payload, subject) => {
          const batch = this.#acceptBatch(payload, subject);
          if (!batch) return;
          if (this.#live) this.#live.push(batch);
          else this.apply(batch, runtime.clock.now());
        }),
        runtime.discovery.watch((event) => {
          if (event.type === "instance-removed") {
            this.removeWorker(event.instanceId);
            this.#reserveFor(event.instanceId, 0);
            this.#forgetModelOf(event.instanceId);
          } else {
            this.#reserveFor(event.instance.id, event.instance.card.totalKvBlocks);
            this.#learnModelOf(event.instance.id, event.instance.model, event.instance.card.blockSize);
            // With kept events (JetStream) the log has what it announced; nothing to ask.
            if (!runtime.kvEventLog) this.#askNewWorker(event.instance.id, event.instance.card.publishesKvEvents === true);
          }
        }),
      );
    }
    this.ready = runtime?.kvEventLog ? this.#replayKept(runtime) : Promise.resolve();
  }

  /**
   * Rebuilds the index from the kept KV events (JetStream) without asking any worker, holding live
   * batches until the kept ones are applied; then drops workers discovery no longer lists.
   */
  async #replayKept(runtime: Runtime): Promise<void> {
    this.#live = [];
    let kept = 0;
    try {
      for await (const event of (runtime.kvEventLog as NonNullable<Runtime["kvEventLog"]>).replay()) {
        const batch = this.#acceptBatch(event.payload, event.subject);
        if (batch) this.apply(batch, runtime.clock.now());
        kept++;
      }
      const alive = new Set((await runtime.discovery.list()).map((i) => i.id));
      for (const workerId of [...this.#lastEventId.keys()]) if (!alive.has(workerId)) this.removeWorker(workerId);
      this.#log.info({ batches: kept }, "KV index rebuilt from the kept KV events");
    } catch (error) {
      this.#log.error({ err: error }, "could not read the kept KV events; workers will be asked for what the index misses");
    } finally {
      const live = this.#live;
      this.#live = undefined;
      for (const batch of live) this.apply(batch, runtime.clock.now());
    }
  }

  /** A well-formed batch published under its own worker's subject, or undefined (counted). */
  #acceptBatch(payload: unknown, subject: string): KvEventBatch | undefined {
    const batch = this.#invalid.accept("kv-event-batch", kvEventBatchSchema, payload, subject);
    if (batch && subject !== subjects.kvEvents(batch.workerId)) {
      this.#invalid.record("kv-event-batch", subject, new Error(`batch of worker ${batch.workerId} published on ${subject}`));
      return undefined;
    }
    return batch;
  }

  /** Applies one batch of a worker's events, in order; starts a recovery on a gap. */
  apply(batch: KvEventBatch, now: number = this.#now()): void {
    this.#lastHeard.set(batch.workerId, now);
    this.#silenceReported.delete(batch.workerId);
    const held = this.#held.get(batch.workerId);
    if (held) {
      held.push(batch);
      return;
    }
    const last = this.#lastEventId.get(batch.workerId) ?? 0;
    if (batch.eventId <= last) return; // already applied (a recovery overlapped it)
    if (batch.eventId > last + 1) {
      if (last > 0) {
        this.#log.warn(
          { workerId: batch.workerId, expected: last + 1, got: batch.eventId },
          "KV events from this worker were lost",
        );
      }
      if (this.#recover) {
        this.#held.set(batch.workerId, [batch]);
        this.#recoverWorker(batch.workerId, last + 1).catch((error: unknown) => {
          this.#log.error({ err: error, workerId: batch.workerId }, "KV event recovery failed unexpectedly");
        });
        return;
      }
    }
    this.#applyEvents(batch.workerId, batch.events);
    this.#lastEventId.set(batch.workerId, batch.eventId);
  }

  /**
   * A worker heard of for the first time is asked for what it announced before this index listened:
   * blocks a restarted worker found in its disk tier, or a whole cache when the router restarts.
   * Its live batches are held meanwhile, as in any recovery. Not with kept events: the log has it.
   */
  #askNewWorker(workerId: string, publishes: boolean): void {
    if (!publishes || !this.#recover || this.#lastEventId.has(workerId) || this.#held.has(workerId)) return;
    this.#held.set(workerId, []);
    this.#recoverWorker(workerId, 1, false).catch((error: unknown) => {
      this.#log.error({ err: error, workerId }, "KV event recovery failed unexpectedly");
    });
  }

  /** `lost`: events went missing (counted in `recoveries.started`), not a first catch-up. */
  async #recoverWorker(workerId: string, fromEventId: number, lost = true): Promise<void> {
    if (lost) this.recoveries.started++;
    try {
      for await (const answer of (this.#recover as RecoveryRequester)(workerId, fromEventId)) {
        const item = this.#invalid.accept(
          (answer as { type?: unknown })?.type === "kv-events-dump" ? "kv-events-dump" : "kv-event-batch",
          kvRecoverySchema,
          answer,
          subjects.kvQuery(workerId),
        );
        if (!item || item.workerId !== workerId)
          throw new Error(`worker ${workerId} answered the KV events query with a malformed message`);
        if (item.type === "kv-events-dump") {
          this.#dropWorkerBlocks(workerId);
          this.#applyEvents(workerId, item.events);
          this.#lastEventId.set(workerId, item.eventId);
        } else if (item.eventId > (this.#lastEventId.get(workerId) ?? 0)) {
          this.#applyEvents(workerId, item.events);
          this.#lastEventId.set(workerId, item.eventId);
        }
      }
      if (lost) this.#log.info({ workerId, fromEventId }, "recovered missed KV events");
    } catch (error) {
      this.recoveries.failed++;
      this.#log.error({ err: error, workerId }, "could not recover missed KV events; routing may miss some of its cached blocks");
    } finally {
      const held = this.#held.get(workerId) ?? [];
      this.#held.delete(workerId);
      for (const batch of held) {
        // What recovery did not cover applies as usual; a further gap starts another recovery.
        if (batch.eventId > (this.#lastEventId.get(workerId) ?? 0)) this.#lastEventId.set(workerId, batch.eventId - 1);
        this.apply(batch);
      }
    }
  }

  #applyEvents(workerId: string, events: readonly KvEvent[]): void {
    for (const event of events) this.#count(event.type, this.#applyOne(workerId, event));
  }

  /**
   * A worker busy with requests whose KV events stopped arriving is reported, once per silence. A
   * worker that says which batch it published last (`kvEventId`) is silent only while that batch
   * has not been applied here: requests that fill no block publish nothing, and that is no loss.
   */
  #checkSilence(load: WorkerLoad, now: number, silenceMs: number): void {
    if (load.activeRequests === 0) return;
    const applied = this.#lastEventId.get(load.workerId) ?? 0;
    if (load.kvEventId !== undefined && load.kvEventId <= applied) {
      this.#lastHeard.set(load.workerId, now);
      return;
    }
    if (!this.#lastHeard.has(load.workerId)) this.#lastHeard.set(load.workerId, now);
    const quietMs = now - (this.#lastHeard.get(load.workerId) as number);
    if (quietMs < silenceMs || this.#silenceReported.has(load.workerId)) return;
    this.#silenceReported.add(load.workerId);
    const published = load.kvEventId === undefined ? {} : { publishedEventId: load.kvEventId, appliedEventId: applied };
    this.#log.warn(
      { workerId: load.workerId, quietMs: Math.round(quietMs), activeRequests: load.activeRequests, ...published },
      "worker is serving requests but its KV events stopped arriving; routing to it works from stale cache state. Check the worker's event publishing, or run the router with --kv-events off",
    );
  }

  /**
   * Sizes the tree for the fleet's KV capacity as workers join (up to 2^20 blocks, ~100 MB), so
   * tables do not rehash millions of entries while events stream in.
   */
  #reserveFor(workerId: string, blocks: number): void {
    this.#capacity += blocks - (this.#capacities.get(workerId) ?? 0);
    if (blocks > 0) this.#capacities.set(workerId, blocks);
    else this.#capacities.delete(workerId);
    this.tree.reserve(Math.min(this.#capacity, 1 << 20));
  }

  /** The block size the model's workers hash with (its first live worker's card), if one is known. */
  blockSizeOf(model: string): number | undefined {
    return this.#models.get(model)?.blockSize;
  }

  #learnModelOf(workerId: string, model: string, blockSize: number): void {
    if (this.#modelOf.get(workerId) === model) return;
    this.#forgetModelOf(workerId);
    this.#modelOf.set(workerId, model);
    const known = this.#models.get(model);
    if (!known) this.#models.set(model, { blockSize, workers: new Set([workerId]) });
    else known.workers.add(workerId);
  }

  #forgetModelOf(workerId: string): void {
    const model = this.#modelOf.get(workerId);
    if (model === undefined) return;
    this.#modelOf.delete(workerId);
    const known = this.#models.get(model);
    known?.workers.delete(workerId);
    // The model's last worker gone: one that comes back may hash with another size.
    if (known?.workers.size === 0) this.#models.delete(model);
  }

  /** The size a worker's stored blocks must have: its model's, else the router's. */
  #expectedBlockSize(workerId: string): number {
    const model = this.#modelOf.get(workerId);
    return (model !== undefined ? this.#models.get(model)?.blockSize : undefined) ?? this.#blockSize;
  }

  /** KV blocks of the workers discovery lists now: what the index's tables are sized for. */
  get fleetCapacity(): number {
    return this.#capacity;
  }

  findMatches(localHashes: readonly bigint[]): OverlapScores {
    const matches = this.tree.findMatches(localHashes);
    return this.#tiers.any ? this.#tiers.split(matches, this.tree.pathHolders(localHashes)) : matches;
  }

  /**
   * Blocks the index holds for the worker, per storage tier: `device`, and each lower tier the
   * worker's KV events named (what the router knows of its cache; not the worker's capacity).
   */
  blocksByTier(workerId: string): Partial<Record<StorageTier, number>> {
    const counts: Partial<Record<StorageTier, number>> = { device: this.tree.blockCount(workerId) };
    for (const tier of this.#tiers.lowerTiersOf(workerId))
      counts[tier] = this.tree.blockCount(this.#tiers.holder(workerId, tier));
    return counts;
  }

  removeWorker(workerId: string): void {
    this.#dropWorkerBlocks(workerId);
    this.#lastEventId.delete(workerId);
  }

  /** Every block of the worker, in every tier. */
  #dropWorkerBlocks(workerId: string): void {
    for (const holder of this.#tiers.holdersOf(workerId)) this.tree.removeWorker(holder);
    this.#tiers.forget(workerId);
  }

  close(): void {
    for (const stop of this.#stops) stop();
  }

  #applyOne(workerId: string, event: KvEvent): ApplyStatus | "block_size_mismatch" {
    switch (event.type) {
      case "kv-block-stored": {
        const expected = this.#expectedBlockSize(workerId);
        if (event.blockSize !== expected) {
          if (!this.#warnedSizes.has(workerId)) {
            this.#warnedSizes.add(workerId);
            this.#log.error(
              { workerId, model: this.#modelOf.get(workerId), workerBlockSize: event.blockSize, routerBlockSize: expected },
              "worker KV block size differs from the one its model's other workers (or the router) hash with; its events are ignored. Start every worker of a model with the same --block-size",
            );
          }
          return "block_size_mismatch";
        }
        return this.tree.applyStored(this.#tiers.holder(workerId, event.storageTier), event);
      }
      case "kv-block-removed":
        return this.tree.applyRemoved(this.#tiers.holder(workerId, event.storageTier), event.blockHashes);
      case "kv-cache-cleared":
        this.#dropWorkerBlocks(workerId);
        return "ok";
    }
  }

  #count(type: KvEvent["type"], status: ApplyStatus | "block_size_mismatch"): void {
    const key = `${type}:${status}` as const;
    this.applied.set(key, (this.applied.get(key) ?? 0) + 1);
  }
}
