import type { Logger } from "../observability/index.js";
import { type BlockHashes, isArmatureError, type KvEvent } from "../protocol/index.js";
import type { BlockRecord } from "./block-record.js";
import type { KvbmMetrics } from "./kvbm-metrics.js";
import type { DiskTier } from "./tiers/disk-tier.js";
import type { HostTier } from "./tiers/host-tier.js";
import type { KvTier, TierName } from "./tiers/kv-tier.js";
import type { ObjectTier } from "./tiers/object-tier.js";

/** Uses remembered per block for the disk filter (a bounded map, oldest forgotten first). */
const USES_LIMIT = 1 << 18;
/** Blocks read at once while onboarding. */
const READ_WINDOW = 16;
/** Bytes a tier's background write queue may hold before offloads to it are skipped. */
const QUEUE_LIMIT_BYTES = 256 * 1024 * 1024;
/** One warning per tier and kind of failure in this period; the metrics count every one. */
const WARN_EVERY_MS = 10_000;

export interface KvBlockManagerOptions {
  readonly blockSize: number;
  /** Fingerprint of the model's KV layout (part of every stored block). */
  readonly layout: bigint;
  readonly host?: HostTier | undefined;
  readonly disk?: DiskTier | undefined;
  readonly object?: ObjectTier | undefined;
  /** Host → disk only for blocks used at least twice (Dynamo's SSD filter). Default true. */
  readonly diskFrequencyFilter?: boolean;
  /** The `model` label of the metrics. */
  readonly modelName: string;
  /** The `worker` label of per-tier gauges (workers of one process differ by it). */
  readonly workerLabel: string;
  readonly metrics: KvbmMetrics;
  readonly logger: Logger;
}

/** A prompt's stored prefix, read back and checked. */
export interface OnboardedPrefix {
  /** The prefix's blocks in order, from block 0. */
  readonly records: readonly BlockRecord[];
  /** How many came from each tier. */
  readonly byTier: Readonly<Record<TierName, number>>;
}

/** What an offload must still cut out of the device's state, and what the host tier already has. */
export interface OffloadPlan {
  /** Block indices whose bytes only the device has. */
  readonly toCut: readonly number[];
  /** Block indices some tier lacks, in order. */
  readonly needed: readonly number[];
}

/** A block read back, and the tier it came from. */
interface FoundRecord {
  readonly record: BlockRecord;
  readonly tier: TierName;
}

/**
 * armature's KV block manager (Dynamo's KVBM) for one engine: blocks keyed by Dynamo's sequence
 * hash live in up to three tiers below the device, G2 host memory, G3 local disk and G4 a shared
 * object store. Offload is write-through: every complete block a request leaves on the device is
 * copied to the host tier, to the disk tier once it was used at least twice, and to the object
 * tier. Onboarding reads the longest stored prefix of a prompt, each block from the fastest tier
 * that has it. A block that fails its checks or cannot be read ends the prefix there: the rest is
 * recomputed, a metric and a warning say so, and the request never sees an error.
 */
export class KvBlockManager {
  readonly blockSize: number;
  readonly layout: bigint;
  readonly #options: KvBlockManagerOptions;
  readonly #tiers: KvTier[];
  readonly #uses = new Map<bigint, number>();
  readonly #queued = new Map<TierName, { bytes: number; tail: Promise<void> }>();
  readonly #warned = new Map<string, number>();

  constructor(options: KvBlockManagerOptions) {
    this.#options = options;
    this.blockSize = options.blockSize;
    this.layout = options.layout;
    this.#tiers = [options.host, options.disk, options.object].filter((t): t is NonNullable<typeof t> => t !== undefined);
  }

  get tiers(): readonly TierName[] {
    return this.#tiers.map((t) => t.name);
  }

  /** Counts a request's use of its prompt blocks (the disk filter's frequency). */
  noteUse(hashes: readonly bigint[]): void {
    for (const hash of hashes) {
      const uses = this.#uses.get(hash);
      this.#uses.delete(hash);
      if (this.#uses.size >= USES_LIMIT) {
        const oldest = this.#uses.keys().next();
        if (!oldest.done) this.#uses.delete(oldest.value);
      }
      this.#uses.set(hash, uses === undefined ? 1 : Math.min(uses * 2, 1 << 20));
    }
    this.#options.host?.hit(hashes);
    this.#options.disk?.hit(hashes);
  }

  /**
   * Reads the longest prefix of `hashes` (at most `maxBlocks` blocks) the tiers hold. Returns
   * undefined when it would not reach past `deviceTokens`, the prefix the device already has.
   */
  async onboard(
    hashes: BlockHashes,
    maxBlocks: number,
    deviceTokens: number,
    /** The tiers worth reading (loading from them beats recomputing); default: all. */
    worthReading: (tier: TierName) => boolean = () => true,
  ): Promise<OnboardedPrefix | undefined> {
    const wanted = Math.min(maxBlocks, hashes.sequence.length);
    const tiers = this.#tiers.filter((tier) => worthReading(tier.name));
    if (tiers.length === 0 || wanted * this.blockSize <= deviceTokens) return undefined;
    const started = performance.now();
    const records: BlockRecord[] = [];
    const byTier: Record<TierName, number> = { host: 0, disk: 0, object: 0 };
    for (let start = 0; start < wanted && records.length === start; start += READ_WINDOW) {
      let window = hashes.sequence.slice(start, Math.min(wanted, start + READ_WINDOW));
      // The first block no tier is known to hold is asked of the object store alone: when it is
      // not there, nothing after it is read (a prefix ends at its first missing block).
      const unknown = window.findIndex((hash) => !tiers.some((tier) => tier.has(hash)));
      let probed: FoundRecord | undefined;
      if (unknown >= 0) {
        probed = await this.#readFromFastest(tiers, window[unknown] as bigint);
        if (!probed) window = window.slice(0, unknown);
      }
      const found = await Promise.all(
        window.map((hash, i) => (i === unknown ? Promise.resolve(probed) : this.#readFromFastest(tiers, hash))),
      );
      for (const item of found) {
        if (!item) break;
        records.push(item.record);
        byTier[item.tier]++;
      }
    }
    const model = this.#options.modelName;
    this.#options.metrics.lookup(model, wanted, byTier);
    if (records.length * this.blockSize <= deviceTokens) return undefined;
    for (const tier of ["host", "disk", "object"] as const) {
      if (byTier[tier] > 0) this.#options.metrics.onboardedBlocks.inc({ model, from: tier }, byTier[tier]);
    }
    this.#options.metrics.matchedTokens.inc({ model }, records.length * this.blockSize);
    this.#options.metrics.onboardSeconds.observe({ model }, (performance.now() - started) / 1000);
    // Blocks that came from below the host tier are kept there for the next request.
    if (this.#options.host && byTier.host < records.length) await this.#options.host.write(records);
    return { records, byTier };
  }

  /** Which complete blocks of a sequence some tier lacks, and which of those only the device has. */
  plan(hashes: BlockHashes): OffloadPlan {
    const { host, disk, object } = this.#options;
    const filter = this.#options.diskFrequencyFilter ?? true;
    const needed: number[] = [];
    const toCut: number[] = [];
    hashes.sequence.forEach((hash, index) => {
      const wantsDisk = disk !== undefined && !disk.has(hash) && (!filter || (this.#uses.get(hash) ?? 0) >= 2);
      const lacking = (host !== undefined && !host.has(hash)) || wantsDisk || (object !== undefined && !object.has(hash));
      if (!lacking) return;
      needed.push(index);
      if (!host?.has(hash)) toCut.push(index);
    });
    return { needed, toCut };
  }

  /**
   * Copies blocks down: `cut` holds the payloads of `plan.toCut` (same order). The host tier is
   * written at once; the disk and object tiers in the background, in order, each with a bounded
   * queue (a full queue skips the blocks and counts them).
   */
  async offload(hashes: BlockHashes, plan: OffloadPlan, cut: readonly Buffer[]): Promise<void> {
    const { host, disk, object } = this.#options;
    const cutByIndex = new Map(plan.toCut.map((index, i) => [index, cut[i] as Buffer]));
    const records: BlockRecord[] = [];
    for (const index of plan.needed) {
      const hash = hashes.sequence[index] as bigint;
      const payload = cutByIndex.get(index) ?? host?.peek(hash)?.payload;
      if (!payload) break;
      records.push({
        hash,
        parent: index === 0 ? null : (hashes.sequence[index - 1] as bigint),
        tokensHash: hashes.local[index] as bigint,
        layout: this.layout,
        payload,
      });
    }
    const model = this.#options.modelName;
    if (host) {
      const fresh = records.filter((r) => !host.has(r.hash));
      await host.write(fresh);
      if (fresh.length > 0) this.#options.metrics.offloadedBlocks.inc({ model, from: "device", to: "host" }, fresh.length);
    }
    const filter = this.#options.diskFrequencyFilter ?? true;
    if (disk) {
      const due = records.filter((r) => !disk.has(r.hash) && (!filter || (this.#uses.get(r.hash) ?? 0) >= 2));
      this.#enqueue(disk, due, host ? "host" : "device");
    }
    if (object)
      this.#enqueue(
        object,
        records.filter((r) => !object.has(r.hash)),
        host ? "host" : "device",
      );
    this.#updateUsage();
  }

  /** Waits for the background writes queued so far. */
  async flushed(): Promise<void> {
    await Promise.all([...this.#queued.values()].map((q) => q.tail));
  }

  /** Every tier's blocks as stored events (recovery dumps). */
  dump(): KvEvent[] {
    return this.#tiers.flatMap((tier) => tier.dump());
  }

  async close(): Promise<void> {
    await this.flushed();
    await Promise.all(this.#tiers.map((tier) => tier.close()));
  }

  async #readFromFastest(tiers: readonly KvTier[], hash: bigint): Promise<FoundRecord | undefined> {
    for (const tier of tiers) {
      if (tier.name !== "object" && !tier.has(hash)) continue;
      try {
        const record = await tier.read(hash);
        if (record) return { record, tier: tier.name };
      } catch (error) {
        this.#readFailed(tier.name, hash, error);
      }
    }
    return undefined;
  }

  #readFailed(tier: TierName, hash: bigint, error: unknown): void {
    const model = this.#options.modelName;
    const corrupted = isArmatureError(error) && error.code === "TRANSFER_CORRUPTED";
    (corrupted ? this.#options.metrics.checksumFailures : this.#options.metrics.readFailures).inc({ model, tier });
    this.#warn(
      `${tier} ${corrupted}`,
      { tier, block: hash.toString(16), err: (error as Error).message },
      corrupted
        ? "a stored KV block failed its checks; it is recomputed"
        : "a stored KV block could not be read; it is recomputed",
    );
  }

  #warn(kind: string, fields: Record<string, unknown>, message: string): void {
    const now = Date.now();
    if (now - (this.#warned.get(kind) ?? Number.NEGATIVE_INFINITY) < WARN_EVERY_MS) return;
    this.#warned.set(kind, now);
    this.#options.logger.warn(fields, message);
  }

  #enqueue(tier: KvTier, records: BlockRecord[], from: "device" | "host"): void {
    if (records.length === 0) return;
    const model = this.#options.modelName;
    const queue = this.#queued.get(tier.name) ?? { bytes: 0, tail: Promise.resolve() };
    this.#queued.set(tier.name, queue);
    const bytes = records.reduce((sum, r) => sum + r.payload.length, 0);
    if (queue.bytes + bytes > QUEUE_LIMIT_BYTES) {
      this.#options.metrics.skippedOffloads.inc({ model, tier: tier.name }, records.length);
      return;
    }
    queue.bytes += bytes;
    queue.tail = queue.tail.then(async () => {
      try {
        await tier.write(records);
        this.#options.metrics.offloadedBlocks.inc({ model, from, to: tier.name }, records.length);
      } catch (error) {
        this.#options.metrics.writeFailures.inc({ model, tier: tier.name }, records.length);
        this.#warn(`${tier.name} write`, { tier: tier.name, err: (error as Error).message }, "KV blocks could not be offloaded");
      } finally {
        queue.bytes -= bytes;
        this.#updateUsage();
      }
    });
  }

  #updateUsage(): void {
    const model = this.#options.modelName;
    for (const tier of this.#tiers) {
      const { bytes, blocks } = tier.usage();
      const labels = { model, worker: this.#options.workerLabel, tier: tier.name };
      this.#options.metrics.tierBytes.set(labels, bytes);
      this.#options.metrics.tierBlocks.set(labels, blocks);
    }
  }
}
