import { mkdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { ArmatureError } from "../protocol/index.js";
import { fileAccess } from "./regions.js";

/**
 * Where object regions live (NIXL's OBJ segments): keys naming byte strings, read and written by
 * range. A store for S3 or a blob service implements the same four methods.
 */
export interface ObjectStore {
  readonly name: string;
  size(key: string): Promise<number>;
  read(key: string, offset: number, target: Buffer): Promise<void>;
  /** Writes bytes at `offset`, growing the object as needed. */
  write(key: string, offset: number, bytes: Uint8Array): Promise<void>;
  delete(key: string): Promise<void>;
}

/** Objects in this process's memory (tests, and a KV tier without disks). */
export class MemoryObjectStore implements ObjectStore {
  readonly name = "memory";
  readonly #objects = new Map<string, Buffer>();

  async size(key: string): Promise<number> {
    return this.#get(key).length;
  }

  async read(key: string, offset: number, target: Buffer): Promise<void> {
    const object = this.#get(key);
    if (offset + target.length > object.length) throw missingRange(key, offset + target.length, object.length);
    object.copy(target, 0, offset, offset + target.length);
  }

  async write(key: string, offset: number, bytes: Uint8Array): Promise<void> {
    let object = this.#objects.get(key) ?? Buffer.alloc(0);
    if (offset + bytes.length > object.length) {
      const grown = Buffer.alloc(offset + bytes.length);
      object.copy(grown);
      object = grown;
    }
    object.set(bytes, offset);
    this.#objects.set(key, object);
  }

  async delete(key: string): Promise<void> {
    this.#objects.delete(key);
  }

  #get(key: string): Buffer {
    const object = this.#objects.get(key);
    if (!object) throw new ArmatureError("TRANSFER_FAILED", `object ${key} is not in the ${this.name} store`);
    return object;
  }
}

/** Objects as files under a root directory, one per key (keys are URI-encoded into file names). */
export class DirectoryObjectStore implements ObjectStore {
  readonly name: string;
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
    this.name = `directory ${root}`;
  }

  async size(key: string): Promise<number> {
    try {
      return (await stat(this.#path(key))).size;
    } catch (cause) {
      throw new ArmatureError("TRANSFER_FAILED", `object ${key} is not in the ${this.name} store`, { cause });
    }
  }

  async read(key: string, offset: number, target: Buffer): Promise<void> {
    await fileAccess(this.#path(key)).readInto(offset, target);
  }

  async write(key: string, offset: number, bytes: Uint8Array): Promise<void> {
    await mkdir(this.#root, { recursive: true });
    await fileAccess(this.#path(key)).writeFrom(offset, bytes);
  }

  async delete(key: string): Promise<void> {
    await rm(this.#path(key), { force: true });
  }

  #path(key: string): string {
    return join(this.#root, encodeURIComponent(key));
  }
}

function missingRange(key: string, end: number, size: number): ArmatureError {
  return new ArmatureError("TRANSFER_FAILED", `object ${key} has ${size} bytes; byte ${end} was asked`);
}
