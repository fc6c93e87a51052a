import { join } from "node:path";
import type { Logger, MetricMeter } from "../observability/index.js";
import { ArmatureError, type KvEvent } from "../protocol/index.js";
import type { ObjectStore } from "../transfer/index.js";
import { KvBlockManager } from "./block-manager.js";
import { KvbmMetrics } from "./kvbm-metrics.js";
import { DiskTier } from "./tiers/disk-tier.js";
import { HostTier } from "./tiers/host-tier.js";
import { ObjectTier } from "./tiers/object-tier.js";

/** Disk tier budget when `--kv-disk-dir` is given without `--kv-disk-bytes`. */
export const DEFAULT_DISK_BYTES = 8 * 1024 ** 3;

/** The tiers a worker keeps below its device, as its flags say. None given: no block manager. */
export interface KvbmSettings {
  /** `--kv-host-bytes`: G2 budget; 0 or absent, no host tier. */
  readonly hostBytes?: number | undefined;
  /** `--kv-disk-dir`: G3 folder (this worker's own). */
  readonly diskDirectory?: string | undefined;
  /** `--kv-disk-bytes`: G3 budget (default 8 GiB). */
  readonly diskBytes?: number | undefined;
  /** `--kv-object-store`, opened: G4, shared by the model's workers. */
  readonly objectStore?: ObjectStore | undefined;
  /** `--kv-disk-filter`: host → disk only for blocks used twice (default on). */
  readonly diskFrequencyFilter?: boolean | undefined;
  /**
   * `--kv-offload`: `as-filled` (default) copies a running request's blocks down once its prompt
   * is evaluated and again as decoding fills more; `at-end` only when the request ends.
   */
  readonly offload?: KvOffloadTiming | undefined;
}

/** When a request's blocks are copied down the tiers (`--kv-offload`). */
export type KvOffloadTiming = "as-filled" | "at-end";

/** Whether the settings ask for any tier. */
export function wantsKvbm(settings: KvbmSettings | undefined): settings is KvbmSettings {
  return (
    settings !== undefined &&
    ((settings.hostBytes ?? 0) > 0 || settings.diskDirectory !== undefined || settings.objectStore !== undefined)
  );
}

/** The folder of worker `index` under `--kv-disk-dir`: stable across restarts, one per worker. */
export function workerDiskDirectory(root: string, index: number): string {
  return join(root, `worker-${index}`);
}

/** Opens the tiers the settings name and the manager over them. */
export async function openKvBlockManager(
  settings: KvbmSettings,
  context: {
    readonly blockSize: number;
    readonly layout: bigint;
    readonly modelName: string;
    readonly workerLabel: string;
    readonly meter: MetricMeter;
    readonly logger: Logger;
    readonly emit: (events: KvEvent[]) => void;
  },
): Promise<KvBlockManager> {
  const { blockSize, layout, emit } = context;
  const hostBytes = settings.hostBytes ?? 0;
  if (!Number.isFinite(hostBytes) || hostBytes < 0)
    throw new ArmatureError("CONFIG_INVALID", `--kv-host-bytes must be a size ≥ 0, got ${hostBytes}`);
  const host = hostBytes > 0 ? new HostTier({ capacityBytes: hostBytes, blockSize, emit }) : undefined;
  const disk = settings.diskDirectory
    ? await DiskTier.open({
        directory: settings.diskDirectory,
        capacityBytes: settings.diskBytes ?? DEFAULT_DISK_BYTES,
        blockSize,
        layout,
        emit,
      })
    : undefined;
  const object = settings.objectStore ? new ObjectTier({ store: settings.objectStore, blockSize, layout, emit }) : undefined;
  return new KvBlockManager({
    blockSize,
    layout,
    host,
    disk,
    object,
    diskFrequencyFilter: settings.diskFrequencyFilter ?? true,
    modelName: context.modelName,
    workerLabel: context.workerLabel,
    metrics: KvbmMetrics.for(context.meter),
    logger: context.logger.child({ component: "kvbm" }),
  });
}
