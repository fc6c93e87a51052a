import { closeSync, existsSync, openSync, readSync, writeSync } from "node:fs";
import { open, stat } from "node:fs/promises";
import { ArmatureError } from "../protocol/index.js";
import type { Medium } from "./descriptors.js";
import type { ObjectStore } from "./object-store.js";

export type Region =
  | { readonly id: string; readonly medium: "memory"; readonly length: number; readonly buffer: Buffer }
  | { readonly id: string; readonly medium: "file"; readonly length: number; readonly path: string }
  | {
      readonly id: string;
      readonly medium: "object";
      readonly length: number;
      readonly store: ObjectStore;
      readonly key: string;
    };

/** The regions one agent registered, and positional reads and writes inside them. */
export class RegionTable {
  readonly #regions = new Map<string, Region>();
  #seq = 0;

  registerMemory(buffer: Buffer, id?: string): Region {
    return this.#add({ id: id ?? this.#nextId("mem"), medium: "memory", length: buffer.length, buffer });
  }

  async registerFile(path: string, options: { id?: string | undefined; length?: number | undefined } = {}): Promise<Region> {
    const length = options.length ?? (await stat(path)).size;
    return this.#add({ id: options.id ?? this.#nextId("file"), medium: "file", length, path });
  }

  async registerObject(
    store: ObjectStore,
    key: string,
    options: { id?: string | undefined; length?: number | undefined } = {},
  ): Promise<Region> {
    const length = options.length ?? (await store.size(key));
    return this.#add({ id: options.id ?? this.#nextId("obj"), medium: "object", length, store, key });
  }

  deregister(id: string): boolean {
    return this.#regions.delete(id);
  }

  /** The region, checked to contain `[offset, offset + length)`. */
  get(id: string, offset = 0, length = 0): Region {
    const region = this.#regions.get(id);
    if (!region) throw new ArmatureError("TRANSFER_FAILED", `region ${id} is not registered (it was freed or never existed)`);
    checkRange(region.id, region.length, offset, length);
    return region;
  }

  #add(region: Region): Region {
    if (this.#regions.has(region.id)) throw new ArmatureError("REQUEST_INVALID", `region ${region.id} is already registered`);
    this.#regions.set(region.id, region);
    return region;
  }

  #nextId(prefix: string): string {
    return `${prefix}-${++this.#seq}`;
  }
}

export function checkRange(id: string, size: number, offset: number, length: number): void {
  if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < 0 || length < 0 || offset + length > size) {
    throw new ArmatureError("REQUEST_INVALID", `bytes [${offset}, ${offset + length}) are outside region ${id} of ${size} bytes`);
  }
}

/** One side of a copy: something that can lend a view of its bytes or read and write them by position. */
export interface RangeAccess {
  readonly medium: Medium;
  /** A zero-copy view of the bytes (memory only). */
  view(offset: number, length: number): Buffer | undefined;
  readInto(offset: number, target: Buffer): Promise<void>;
  writeFrom(offset: number, source: Uint8Array): Promise<void>;
}

export function memoryAccess(buffer: Buffer): RangeAccess {
  return {
    medium: "memory",
    view: (offset, length) => buffer.subarray(offset, offset + length),
    async readInto(offset, target) {
      buffer.copy(target, 0, offset, offset + target.length);
    },
    async writeFrom(offset, source) {
      buffer.set(source, offset);
    },
  };
}

/**
 * Ranges up to this size are read and written with synchronous calls: a few microseconds of
 * blocking beat two thread-pool hops (open, read, close) that cost ~100 µs each on a busy host.
 */
const SYNC_IO_BYTES = 1 << 20;

export function fileAccess(path: string): RangeAccess {
  return {
    medium: "file",
    view: () => undefined,
    async readInto(offset, target) {
      if (target.length <= SYNC_IO_BYTES) {
        const fd = openSync(path, "r");
        try {
          readFully((at) => readSync(fd, target, at, target.length - at, offset + at), target.length, path, offset);
        } finally {
          closeSync(fd);
        }
        return;
      }
      const handle = await open(path, "r");
      try {
        let done = 0;
        while (done < target.length) {
          const { bytesRead } = await handle.read(target, done, target.length - done, offset + done);
          if (bytesRead === 0) throw endedEarly(path, offset + target.length);
          done += bytesRead;
        }
      } finally {
        await handle.close();
      }
    },
    async writeFrom(offset, source) {
      if (source.length <= SYNC_IO_BYTES) {
        const fd = openSync(path, existsSync(path) ? "r+" : "w+");
        try {
          let done = 0;
          while (done < source.length) done += writeSync(fd, source, done, source.length - done, offset + done);
        } finally {
          closeSync(fd);
        }
        return;
      }
      const handle = await open(path, "r+").catch(() => open(path, "w+"));
      try {
        let done = 0;
        while (done < source.length) {
          const { bytesWritten } = await handle.write(source, done, source.length - done, offset + done);
          done += bytesWritten;
        }
      } finally {
        await handle.close();
      }
    },
  };
}

function readFully(read: (at: number) => number, length: number, path: string, offset: number): void {
  let done = 0;
  while (done < length) {
    const n = read(done);
    if (n === 0) throw endedEarly(path, offset + length);
    done += n;
  }
}

function endedEarly(path: string, end: number): ArmatureError {
  return new ArmatureError("TRANSFER_FAILED", `${path} ended before byte ${end}`);
}

export function objectAccess(store: ObjectStore, key: string): RangeAccess {
  return {
    medium: "object",
    view: () => undefined,
    readInto: (offset, target) => store.read(key, offset, target),
    writeFrom: (offset, source) => store.write(key, offset, source),
  };
}

export function regionAccess(region: Region): RangeAccess {
  if (region.medium === "memory") return memoryAccess(region.buffer);
  if (region.medium === "file") return fileAccess(region.path);
  return objectAccess(region.store, region.key);
}

/** Copies `length` bytes between two accesses, without a staging buffer when either side is memory. */
export async function copyRange(
  source: RangeAccess,
  sourceOffset: number,
  target: RangeAccess,
  targetOffset: number,
  length: number,
): Promise<void> {
  const sourceView = source.view(sourceOffset, length);
  if (sourceView) return target.writeFrom(targetOffset, sourceView);
  const targetView = target.view(targetOffset, length);
  if (targetView) return source.readInto(sourceOffset, targetView);
  const staging = Buffer.allocUnsafe(length);
  await source.readInto(sourceOffset, staging);
  await target.writeFrom(targetOffset, staging);
}
