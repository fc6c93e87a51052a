import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { KvEvent } from "../../protocol/index.js";
import { ArmatureError } from "../../protocol/index.js";
import { isProcessAlive } from "../../transfer/index.js";
import { BlockPool } from "../block-pool.js";
import {
  BLOCK_RECORD_HEADER_BYTES,
  type BlockRecord,
  type BlockRecordHeader,
  decodeBlockRecord,
  encodeBlockRecord,
  hex,
  readBlockRecordHeader,
} from "../block-record.js";
import { dumpParentsFirst, type KvTier, STORAGE_TIER, storedEvents, type TierEventSink } from "./kv-tier.js";

const SUFFIX = ".kvb";
/** Names the process that owns a disk tier's folder. */
const LOCK = ".owner-pid";

export interface DiskTierOptions {
  /** The folder given by `--kv-disk-dir`; blocks live in a subfolder per KV layout. */
  readonly directory: string;
  readonly capacityBytes: number;
  readonly blockSize: number;
  /** Fingerprint of the model's KV layout (blocks of other layouts are never read). */
  readonly layout: bigint;
  readonly emit: TierEventSink;
}

/**
 * G3: one file per block in a local folder, within a byte budget (`--kv-disk-bytes`). Files are
 * written whole under a temporary name and renamed, so a crash never leaves half a block under a
 * block's name. On start the folder is scanned: every well-formed block file comes back (its
 * payload is checked against its checksum when it is read), so a restarted worker finds its
 * blocks again and announces them.
 */
export class DiskTier implements KvTier {
  readonly name = "disk" as const;
  readonly folder: string;
  readonly #pool: BlockPool<BlockRecordHeader>;
  readonly #options: DiskTierOptions;
  #temporaries = 0;

  private constructor(options: DiskTierOptions, folder: string) {
    this.#options = options;
    this.folder = folder;
    this.#pool = new BlockPool({ capacityBytes: options.capacityBytes });
  }

  /**
   * Opens the folder, creating it; refuses one that cannot be written (CONFIG_INVALID naming
   * `--kv-disk-dir`). Blocks found there are announced through `emit` once scanned.
   */
  static async open(options: DiskTierOptions): Promise<DiskTier> {
    const folder = join(options.directory, hex(options.layout));
    try {
      await mkdir(folder, { recursive: true });
      const probe = join(folder, `.probe-${process.pid}`);
      await writeFile(probe, "");
      await rm(probe);
    } catch (cause) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        `--kv-disk-dir ${options.directory} cannot be written: ${(cause as Error).message}`,
        { cause },
      );
    }
    await takeLock(options.directory);
    const tier = new DiskTier(options, folder);
    await tier.#scan();
    return tier;
  }

  has(hash: bigint): boolean {
    return this.#pool.has(hash);
  }

  async read(hash: bigint): Promise<BlockRecord | undefined> {
    if (!this.#pool.has(hash)) return undefined;
    const path = this.#path(hash);
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (cause) {
      this.#forget([hash]);
      throw new ArmatureError("TRANSFER_FAILED", `KV block file ${path} cannot be read: ${(cause as Error).message}`, {
        cause,
        retryable: true,
      });
    }
    try {
      return decodeBlockRecord(bytes, { hash, layout: this.#options.layout }, path);
    } catch (error) {
      this.#forget([hash]);
      await rm(path, { force: true }).catch(() => undefined);
      throw error;
    }
  }

  async write(records: readonly BlockRecord[]): Promise<void> {
    const stored: BlockRecord[] = [];
    const removed: bigint[] = [];
    for (const record of records) {
      if (this.#pool.has(record.hash)) continue;
      const bytes = BLOCK_RECORD_HEADER_BYTES + record.payload.length;
      if (!this.#pool.fits(bytes)) continue;
      const temporary = join(this.folder, `.tmp-${process.pid}-${this.#temporaries++}`);
      try {
        await writeFile(temporary, encodeBlockRecord(record));
        await rename(temporary, this.#path(record.hash));
      } catch (cause) {
        await rm(temporary, { force: true }).catch(() => undefined);
        this.#announce(stored, removed);
        throw new ArmatureError("TRANSFER_FAILED", `KV block cannot be written to ${this.folder}: ${(cause as Error).message}`, {
          cause,
          retryable: true,
        });
      }
      const evicted = this.#pool.insert(record.hash, headerOf(record), bytes);
      for (const { hash } of evicted) removed.push(hash);
      stored.push(record);
    }
    this.#announce(stored, removed);
    await Promise.all(removed.map((hash) => rm(this.#path(hash), { force: true })));
  }

  /** Children first, so parents stay more recent than their children and leaves are evicted first. */
  hit(hashes: readonly bigint[]): void {
    for (let i = hashes.length - 1; i >= 0; i--) this.#pool.hit(hashes[i] as bigint);
  }

  usage(): { bytes: number; blocks: number } {
    return { bytes: this.#pool.bytes, blocks: this.#pool.size };
  }

  dump(): KvEvent[] {
    return dumpParentsFirst(
      [...this.#pool.entries()].map(([, header]) => header),
      this.#options.blockSize,
      STORAGE_TIER.disk,
    );
  }

  async close(): Promise<void> {
    await rm(join(this.#options.directory, LOCK), { force: true });
  }

  #announce(stored: readonly BlockRecord[], removed: readonly bigint[]): void {
    this.hit(stored.map((r) => r.hash));
    const events: KvEvent[] = [];
    if (removed.length > 0) events.push({ type: "kv-block-removed", blockHashes: [...removed], storageTier: STORAGE_TIER.disk });
    events.push(...storedEvents(stored, this.#options.blockSize, STORAGE_TIER.disk));
    if (events.length > 0) this.#options.emit(events);
  }

  #path(hash: bigint): string {
    return join(this.folder, `${hex(hash)}${SUFFIX}`);
  }

  #forget(hashes: bigint[]): void {
    for (const hash of hashes) this.#pool.delete(hash);
    this.#options.emit([{ type: "kv-block-removed", blockHashes: hashes, storageTier: STORAGE_TIER.disk }]);
  }

  /** Takes back every block file whose header is well formed, oldest first (so they stay oldest). */
  async #scan(): Promise<void> {
    const found: Array<{ header: BlockRecordHeader; bytes: number; modified: number }> = [];
    for (const name of await readdir(this.folder)) {
      const path = join(this.folder, name);
      if (name.startsWith(".tmp-")) {
        await rm(path, { force: true });
        continue;
      }
      if (!name.endsWith(SUFFIX)) continue;
      const header = await readHeader(path);
      const info = await stat(path).catch(() => undefined);
      const good =
        header !== undefined &&
        info !== undefined &&
        `${hex(header.hash)}${SUFFIX}` === name &&
        header.layout === this.#options.layout &&
        info.size === BLOCK_RECORD_HEADER_BYTES + header.payloadBytes;
      if (!good) {
        await rm(path, { force: true });
        continue;
      }
      found.push({ header, bytes: info.size, modified: info.mtimeMs });
    }
    found.sort((a, b) => a.modified - b.modified);
    for (const { header, bytes } of found) {
      for (const { hash } of this.#pool.insert(header.hash, header, bytes)) await rm(this.#path(hash), { force: true });
    }
    const events = this.dump();
    if (events.length > 0) this.#options.emit(events);
  }
}

function headerOf(record: BlockRecord): BlockRecordHeader {
  return {
    hash: record.hash,
    parent: record.parent,
    tokensHash: record.tokensHash,
    layout: record.layout,
    payloadBytes: record.payload.length,
  };
}

async function readHeader(path: string): Promise<BlockRecordHeader | undefined> {
  const handle = await open(path, "r").catch(() => undefined);
  if (!handle) return undefined;
  try {
    const head = Buffer.alloc(BLOCK_RECORD_HEADER_BYTES);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    return bytesRead === head.length ? readBlockRecordHeader(head, path) : undefined;
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

/**
 * Claims the folder for this process: a folder another live process claimed is refused, since two
 * budgets over one folder would delete each other's blocks. A claim by a dead process is taken over.
 */
async function takeLock(directory: string): Promise<void> {
  const path = join(directory, LOCK);
  const owner = Number.parseInt(await readFile(path, "utf8").catch(() => ""), 10);
  if (Number.isInteger(owner) && owner !== process.pid && isProcessAlive(owner)) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--kv-disk-dir ${directory} is in use by process ${owner}; give each worker process its own --kv-disk-dir`,
    );
  }
  await writeFile(path, String(process.pid));
}
