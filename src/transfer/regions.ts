import { open, stat } from "node:fs/promises";
import { ArmatureError } from "../protocol/index.js";
import type { Medium } from "./descriptors.js";

export type Region =
  | { readonly id: string; readonly medium: "memory"; readonly length: number; readonly buffer: Buffer }
  | { readonly id: string; readonly medium: "file"; readonly length: number; readonly path: string };

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

  deregister(id: string): boolean {
    return this.#regions.delete(id);
  }

  get size(): number {
    return this.#regions.size;
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

export function fileAccess(path: string): RangeAccess {
  return {
    medium: "file",
    view: () => undefined,
    async readInto(offset, target) {
      const handle = await open(path, "r");
      try {
        let done = 0;
        while (done < target.length) {
          const { bytesRead } = await handle.read(target, done, target.length - done, offset + done);
          if (bytesRead === 0) throw new ArmatureError("TRANSFER_FAILED", `${path} ended before byte ${offset + target.length}`);
          done += bytesRead;
        }
      } finally {
        await handle.close();
      }
    },
    async writeFrom(offset, source) {
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

export function regionAccess(region: Region): RangeAccess {
  return region.medium === "memory" ? memoryAccess(region.buffer) : fileAccess(region.path);
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
