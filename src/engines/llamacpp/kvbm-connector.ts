import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import {
  assembleState,
  cutBlocks,
  type KvBlockManager,
  type KvbmSettings,
  type KvOffloadTiming,
  kvLayoutFingerprint,
  openKvBlockManager,
  parseSequenceState,
  type StateShape,
  stateTokens,
  type TierName,
} from "../../kvbm/index.js";
import type { Logger, MetricMeter } from "../../observability/index.js";
import { hashBlocks, type KvCosts, type KvEvent, ONBOARD_TIER, onboardingSaving } from "../../protocol/index.js";
import { RateMeter } from "./rate-meter.js";
import { sharedPrefixLength } from "./sequence-slots.js";

/** What the engine needs to open its block manager. */
export interface KvbmConnectorOptions {
  readonly settings: KvbmSettings;
  /** The `model` label of the KVBM metrics. */
  readonly modelName: string;
  /** The `worker` label of per-tier gauges. */
  readonly workerLabel: string;
  readonly meter: MetricMeter;
  readonly logger: Logger;
}

/** A prompt prefix loaded from the tiers into a sequence. */
export interface OnboardedTokens {
  readonly tokens: number;
  readonly byTier: Readonly<Record<TierName, number>>;
}

/**
 * Connects llama.cpp sequences to the KV block manager (Dynamo's KVBM connector). llama.cpp gives
 * no access to single KV blocks, but a saved sequence state is its documented layout: blocks are
 * cut out of a saved state to offload them, and a state for a stored prefix is assembled from
 * blocks and loaded (docs/decisions/0010). State files pass through a private folder in memory
 * (/dev/shm) where there is one.
 */
export class KvbmConnector {
  readonly manager: KvBlockManager;
  /** `--kv-offload`: whether running requests' blocks go down as they fill, or at their end only. */
  readonly offloadTiming: KvOffloadTiming;
  readonly #shape: StateShape;
  readonly #folder: string;
  readonly #logger: Logger;
  /** Onboarding bandwidth (read, assemble, load), by the tier that gave most of a prefix. */
  readonly #bandwidth: Record<TierName, RateMeter> = {
    host: new RateMeter(1),
    disk: new RateMeter(1),
    object: new RateMeter(1),
  };
  #files = 0;
  /** Lookups each tier sat out because it measured slower than recomputing. */
  readonly #satOut: Record<TierName, number> = { host: 0, disk: 0, object: 0 };

  private constructor(
    manager: KvBlockManager,
    offloadTiming: KvOffloadTiming,
    shape: StateShape,
    folder: string,
    logger: Logger,
  ) {
    this.manager = manager;
    this.offloadTiming = offloadTiming;
    this.#shape = shape;
    this.#folder = folder;
    this.#logger = logger;
  }

  /**
   * Learns the KV layout by saving a one-token state from `probe` (left empty afterwards), then
   * opens the tiers. Errors name the flag at fault (an unwritable `--kv-disk-dir`, say).
   */
  static async open(
    options: KvbmConnectorOptions & {
      readonly modelPath: string;
      readonly probe: LlamaContextSequence;
      readonly probeToken: number;
      readonly blockSize: number;
      readonly emit: (events: KvEvent[]) => void;
    },
  ): Promise<KvbmConnector> {
    const folder = await mkdtemp(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "armature-kvbm-"));
    try {
      const { probe } = options;
      await probe.evaluateWithoutGeneratingNewTokens([options.probeToken as Token]);
      const path = join(folder, "probe.state");
      await probe.saveStateToFile(path);
      await probe.eraseContextTokenRanges([{ start: 0, end: probe.nextTokenIndex }]);
      const shape = parseSequenceState(await readFile(path)).shape;
      await rm(path);
      const layout = await kvLayoutFingerprint(options.modelPath, shape.shapeKey);
      const manager = await openKvBlockManager(options.settings, {
        blockSize: options.blockSize,
        layout,
        modelName: options.modelName,
        workerLabel: options.workerLabel,
        meter: options.meter,
        logger: options.logger,
        emit: options.emit,
      });
      return new KvbmConnector(
        manager,
        options.settings.offload ?? "as-filled",
        shape,
        folder,
        options.logger.child({ component: "kvbm" }),
      );
    } catch (error) {
      await rm(folder, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * Loads the longest stored prefix of `tokens` into `sequence` when it is longer than
   * `deviceTokens` (what the sequence already holds of the prompt); at least one prompt token is
   * left to evaluate. Undefined when the device prefix is as good, or when the load fails (the
   * sequence is then empty and the prompt is recomputed).
   */
  async onboard(
    sequence: LlamaContextSequence,
    tokens: readonly number[],
    deviceTokens: number,
    /** The engine's measured prefill rate and its KV bytes per token, to judge each tier by. */
    prefill?: { readonly tokensPerSecond: number | undefined; readonly kvBytesPerToken: number | undefined },
  ): Promise<OnboardedTokens | undefined> {
    const blockSize = this.manager.blockSize;
    const hashes = hashBlocks(tokens, blockSize);
    this.manager.noteUse(hashes.sequence);
    const started = performance.now();
    const costs: KvCosts = {
      prefillTokensPerSecond: prefill?.tokensPerSecond,
      onboardBytesPerSecond: this.onboardBytesPerSecond(),
    };
    const prefix = await this.manager.onboard(hashes, Math.floor((tokens.length - 1) / blockSize), deviceTokens, (tier) =>
      this.#worthReading(tier, costs, prefill?.kvBytesPerToken),
    );
    if (!prefix) return undefined;
    const count = prefix.records.length * blockSize;
    const path = this.#file();
    try {
      await writeFile(
        path,
        assembleState(
          this.#shape,
          tokens.slice(0, count),
          prefix.records.map((r) => r.payload),
        ),
      );
      if (sequence.nextTokenIndex > 0) await sequence.eraseContextTokenRanges([{ start: 0, end: sequence.nextTokenIndex }]);
      await sequence.loadStateFromFile(path, { acceptRisk: true });
      const bytes = prefix.records.reduce((sum, r) => sum + r.payload.length, 0);
      this.#bandwidth[mainTier(prefix.byTier)].record(bytes, (performance.now() - started) / 1000);
      return { tokens: count, byTier: prefix.byTier };
    } catch (error) {
      this.#logger.warn({ err: (error as Error).message }, "a stored KV prefix could not be loaded; it is recomputed");
      if (sequence.nextTokenIndex > 0) await sequence.eraseContextTokenRanges([{ start: 0, end: sequence.nextTokenIndex }]);
      return undefined;
    } finally {
      await rm(path, { force: true });
    }
  }

  /**
   * The payloads of the prompt's first `count` blocks as the tiers store them, with the shape they
   * assemble into; undefined when the tiers hold fewer (a block missing or failing its checks).
   * Blocks read from below the host tier are kept on the host tier, as an onboarding keeps them.
   */
  async storedBlocks(tokens: readonly number[], count: number): Promise<{ blocks: Buffer[]; shape: StateShape } | undefined> {
    const blockSize = this.manager.blockSize;
    const hashes = hashBlocks(tokens.slice(0, count * blockSize), blockSize);
    if (count < 1 || hashes.sequence.length < count) return undefined;
    this.manager.noteUse(hashes.sequence);
    const prefix = await this.manager.onboard(hashes, count, 0);
    if (!prefix || prefix.records.length < count) return undefined;
    return { blocks: prefix.records.map((r) => r.payload), shape: this.#shape };
  }

  /**
   * Copies the complete blocks the sequence holds and some tier lacks down the tiers: the bytes
   * of blocks only the device has are cut from a saved state (one save per call, none when every
   * tier has them already). The sequence may go on decoding meanwhile: the state saved holds at
   * least the tokens planned for, and blocks whose tokens it no longer holds are not offloaded.
   * Failures are logged, never thrown; the sequence is untouched.
   */
  async offload(sequence: LlamaContextSequence): Promise<void> {
    const tokens = sequence.contextTokens;
    const blockSize = this.manager.blockSize;
    const hashes = hashBlocks(tokens, blockSize);
    const plan = this.manager.plan(hashes);
    if (plan.needed.length === 0) return;
    try {
      let cut: Buffer[] = [];
      if (plan.toCut.length > 0) {
        const path = this.#file();
        try {
          await sequence.saveStateToFile(path);
          const bytes = await readFile(path);
          const layout = parseSequenceState(bytes);
          const first = plan.toCut[0] as number;
          const last = plan.toCut.at(-1) as number;
          if (sharedPrefixLength(stateTokens(bytes, layout), tokens) < (last + 1) * blockSize) {
            this.#logger.debug("the sequence changed before its state was saved; its blocks are not offloaded");
            return;
          }
          const range = cutBlocks(bytes, layout, blockSize, first, last + 1);
          cut = plan.toCut.map((index) => range[index - first] as Buffer);
        } finally {
          await rm(path, { force: true });
        }
      }
      await this.manager.offload(hashes, plan, cut);
    } catch (error) {
      this.#logger.warn(
        { err: (error as Error).message },
        "KV blocks could not be cut from the sequence; they are not offloaded",
      );
    }
  }

  /** Measured onboarding bandwidth per storage tier, bytes per second (tiers not measured yet left out). */
  onboardBytesPerSecond(): Partial<Record<"host_pinned" | "disk" | "external", number>> {
    const out: Partial<Record<"host_pinned" | "disk" | "external", number>> = {};
    const { host, disk, object } = this.#bandwidth;
    if (host.rate !== undefined) out.host_pinned = host.rate;
    if (disk.rate !== undefined) out.disk = disk.rate;
    if (object.rate !== undefined) out.external = object.rate;
    return out;
  }

  async close(): Promise<void> {
    await this.manager.close();
    await rm(this.#folder, { recursive: true, force: true });
  }

  /**
   * Whether loading from `tier` beats recomputing, by the formula the router weighs this worker's
   * lower-tier blocks with (`onboardingSaving` above 0); a tier not measured yet is read. A tier
   * judged slower sits out, but every 32nd lookup reads it anyway so its bandwidth is measured
   * again (a cold page cache, say, may have made one read slow).
   */
  #worthReading(tier: TierName, costs: KvCosts, kvBytesPerToken: number | undefined): boolean {
    const saving = onboardingSaving(costs, ONBOARD_TIER[tier], kvBytesPerToken);
    if (saving === undefined || saving > 0) return true;
    return ++this.#satOut[tier] % REMEASURE_EVERY === 0;
  }

  #file(): string {
    return join(this.#folder, `${this.#files++}.state`);
  }
}

/** A tier that measured slower than recomputing is read again on this lookup of every so many. */
const REMEASURE_EVERY = 32;

/** The tier that gave most blocks of a prefix (the slower one on a tie: it bounds the time). */
function mainTier(byTier: Readonly<Record<TierName, number>>): TierName {
  let main: TierName = "host";
  for (const tier of ["host", "disk", "object"] as const) if (byTier[tier] >= byTier[main]) main = tier;
  return main;
}
