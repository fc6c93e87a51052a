import { MockerEngine, type ObjectTier, type SeededRandom, type TimingModel } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import type { WorkerRole } from "../protocol/index.js";
import {
  ActiveLoad,
  ApproximateIndex,
  createBasicPolicy,
  KvIndexer,
  kvPolicy,
  type RoutingPolicy,
  randomPolicy,
  type WorkerView,
} from "../router/index.js";
import type { VirtualClock } from "../runtime/index.js";
import { modelCardFor } from "../worker/index.js";

export type ReplayPolicy = "kv" | "kv-approx" | "round-robin" | "random" | "least-loaded";

export interface PoolOptions {
  readonly role: WorkerRole;
  readonly count: number;
  readonly policy: ReplayPolicy;
  readonly clock: VirtualClock;
  readonly rng: SeededRandom;
  readonly blockSize: number;
  readonly kvBlocks: number;
  readonly contextLength: number;
  readonly kvBytesPerToken: number;
  readonly timing?: TimingModel | undefined;
  /** KV selection weight of prefill work (0: decode pools choose by load alone). Default 1. */
  readonly overlapWeight?: number;
  /** Host-tier blocks per worker (0: none). */
  readonly hostKvBlocks?: number;
  /** Host-to-device bandwidth for onboarding, GB/s. */
  readonly hostGbps?: number | undefined;
  /** Disk-tier blocks per worker (0: none), and its bandwidth for onboarding, GB/s. */
  readonly diskKvBlocks?: number;
  readonly diskGbps?: number | undefined;
  /** One object tier every worker of the replay shares. */
  readonly objectTier?: ObjectTier | undefined;
  /** What a lower-tier block saves of prefill in the KV policy, against 1 on the device. */
  readonly lowerTierWeight?: number | undefined;
}

interface MutableView {
  readonly id: string;
  readonly card: WorkerView["card"];
  inflight: number;
  published: WorkerView["published"];
}

/** The worker picked for one request, with its booking released by `done`. */
export interface Assignment {
  readonly engine: MockerEngine;
  readonly workerId: string;
  /** Prompt blocks the chosen worker caches (0 when the policy does not know). */
  readonly overlapBlocks: number;
  /** The prefill (or first token) is done: its prefill tokens stop counting as load. */
  prefillDone(): void;
  done(): void;
}

/** N mocker workers of one role in virtual time, with the real KV index, booked load and routing policy. */
export class ReplayPool {
  readonly engines: MockerEngine[];
  readonly #views: MutableView[];
  readonly #policy: RoutingPolicy;
  readonly #load: ActiveLoad;
  readonly #indexer: KvIndexer;
  readonly #blockSize: number;
  #seq = 0;

  constructor(o: PoolOptions) {
    this.#blockSize = o.blockSize;
    this.engines = Array.from(
      { length: o.count },
      () =>
        new MockerEngine({
          clock: o.clock,
          blockSize: o.blockSize,
          kvBlocks: o.kvBlocks,
          contextLength: o.contextLength,
          kvBytesPerToken: o.kvBytesPerToken,
          hostKvBlocks: o.hostKvBlocks ?? 0,
          ...(o.hostGbps !== undefined ? { hostGbps: o.hostGbps } : {}),
          diskKvBlocks: o.diskKvBlocks ?? 0,
          ...(o.diskGbps !== undefined ? { diskGbps: o.diskGbps } : {}),
          ...(o.objectTier ? { objectTier: o.objectTier } : {}),
          ...(o.timing ? { timing: o.timing } : {}),
        }),
    );
    this.#indexer = new KvIndexer({ logger: silentLogger, blockSize: o.blockSize });
    this.#load = new ActiveLoad({ routerId: `replay-${o.role}`, clock: o.clock });
    this.#views = this.engines.map((engine, i) => {
      const id = `${o.role}-${String(i).padStart(4, "0")}`;
      let eventId = 0;
      engine.onKvEvents((events) => this.#indexer.apply({ type: "kv-event-batch", workerId: id, eventId: ++eventId, events }));
      return { id, card: modelCardFor(engine.info, "replay", o.role), inflight: 0, published: undefined };
    });
    const random = (): number => o.rng.next();
    const kv = {
      blockSize: o.blockSize,
      activeLoad: this.#load,
      random,
      overlapWeight: o.overlapWeight ?? 1,
      ...(o.lowerTierWeight !== undefined ? { lowerTierWeight: o.lowerTierWeight } : {}),
    };
    this.#policy =
      o.policy === "kv"
        ? kvPolicy({ indexer: this.#indexer, ...kv })
        : o.policy === "kv-approx"
          ? kvPolicy({ indexer: new ApproximateIndex({ clock: o.clock, blockSize: o.blockSize }), ...kv })
          : o.policy === "random"
            ? randomPolicy(random)
            : createBasicPolicy(o.policy);
  }

  /** Requests this pool holds now, per worker on average (its queue). */
  get inflightPerWorker(): number {
    return this.#views.reduce((sum, v) => sum + v.inflight, 0) / this.#views.length;
  }

  /** Blocks of `tokenIds` the best-placed worker of this pool caches, from the KV index. */
  bestCachedBlocks(localHashes: readonly bigint[]): number {
    let best = 0;
    for (const score of this.#indexer.findMatches(localHashes).scores.values()) best = Math.max(best, score);
    return best;
  }

  /** Chooses a worker for the prompt and books its load. */
  assign(tokenIds: readonly number[], options: { prefillTokens: boolean }): Assignment {
    const route = { model: "replay", tokenIds };
    const chosen = this.#policy.select(this.#views, route);
    const view = this.#views.find((v) => v.id === chosen.id) as MutableView;
    const engine = this.engines[this.#views.indexOf(view)] as MockerEngine;
    view.inflight++;
    const overlapBlocks = this.#policy.overlapBlocks?.(view.id, route) ?? 0;
    const booking = `${view.id}#${++this.#seq}`;
    const uncached = options.prefillTokens ? Math.max(0, tokenIds.length - overlapBlocks * this.#blockSize) : 0;
    this.#load.add(booking, view.id, uncached, Math.ceil(tokenIds.length / this.#blockSize));
    this.#policy.onRouted?.(view.id, route);
    let prefilled = false;
    return {
      engine,
      workerId: view.id,
      overlapBlocks,
      prefillDone: () => {
        if (prefilled) return;
        prefilled = true;
        this.#load.prefillDone(booking);
        this.#policy.onFirstToken?.(view.id, route);
      },
      done: () => {
        view.inflight--;
        this.#load.free(booking);
        this.#policy.onFinished?.(view.id, route);
      },
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.engines.map((e) => e.close()));
    this.#indexer.close();
    this.#load.close();
  }
}
