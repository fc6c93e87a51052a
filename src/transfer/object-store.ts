import { randomUUID } from "node:crypto";
import { link, mkdir, opendir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ArmatureError } from "../protocol/index.js";
import { fileAccess } from "./regions.js";

/** One object as `ObjectStore.list` reports it. */
export interface ObjectEntry {
  readonly key: string;
  /** The object's size in bytes. */
  readonly bytes: number;
}

/**
 * Where object regions live (NIXL's OBJ segments) and where the KV block manager keeps immutable
 * blocks keyed by their hash: keys naming byte strings. Ranged `read`/`write` serve transfer regions;
 * `putIfAbsent`/`get`/`list` serve whole immutable objects.
 *
 * Errors are `ArmatureError` "TRANSFER_FAILED": `retryable` true when the store could not be asked
 * (down, unreachable, timed out), false when it answered no (absent key, short object, refused
 * access). Empty keys are refused.
 */
export interface ObjectStore {
  readonly name: string;
  /**
   * Whether concurrent `putIfAbsent` calls for one key, from any number of processes, are
   * guaranteed to have exactly one winner. When false, two racing writers may both be told `true`
   * (the stored bytes are then one writer's, whole; never a mix).
   */
  readonly atomicPutIfAbsent: boolean;
  /** The object's size in bytes. Throws (not retryable) when the key is absent. */
  size(key: string): Promise<number>;
  /** Fills `target` from byte `offset`. Throws (not retryable) when the object is absent or too short. */
  read(key: string, offset: number, target: Buffer): Promise<void>;
  /**
   * Writes bytes at `offset`, growing the object as needed. Not atomic: a concurrent reader may see
   * part of the write. Stores of immutable objects (S3, NATS) read, modify and rewrite the whole
   * object, which is slow; use `putIfAbsent` for whole objects.
   */
  write(key: string, offset: number, bytes: Uint8Array): Promise<void>;
  /** Removes the object; removing an absent key is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Stores `bytes` under `key` unless the key already holds an object: true if this call wrote it,
   * false if the key existed (it is left unchanged). A reader never sees part of the object.
   * See `atomicPutIfAbsent` for racing writers.
   */
  putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean>;
  /**
   * Stores `bytes` under `key`, replacing any object there whole: a reader sees the old object or
   * the new one, never part of either (mutable records: a batch's state).
   */
  put(key: string, bytes: Uint8Array): Promise<void>;
  /** The whole object (a copy the caller owns), or undefined when the key is absent. */
  get(key: string): Promise<Buffer | undefined>;
  /**
   * The objects whose keys start with `prefix` ("" for all), in no promised order, pulled page by
   * page where the store pages. Objects written or deleted while listing may or may not appear.
   */
  list(prefix: string): AsyncIterable<ObjectEntry>;
  /** Releases the store's connections (never a bus connection it was given). Idempotent. */
  close(): Promise<void>;
}

/** Objects in this process's memory (tests, and a KV tier without disks). `putIfAbsent` is atomic. */
export class MemoryObjectStore implements ObjectStore {
  readonly name: string;
  readonly atomicPutIfAbsent = true;
  readonly #objects = new Map<string, Buffer>();

  /** @param name shown in errors (default "memory"). */
  constructor(name = "memory") {
    this.name = name;
  }

  async size(key: string): Promise<number> {
    return this.#get(key).length;
  }

  async read(key: string, offset: number, target: Buffer): Promise<void> {
    const object = this.#get(key);
    if (offset + target.length > object.length) throw missingRange(key, offset + target.length, object.length);
    object.copy(target, 0, offset, offset + target.length);
  }

  async write(key: string, offset: number, bytes: Uint8Array): Promise<void> {
    checkObjectKey(key);
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

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    checkObjectKey(key);
    if (this.#objects.has(key)) return false;
    this.#objects.set(key, Buffer.from(bytes));
    return true;
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    checkObjectKey(key);
    this.#objects.set(key, Buffer.from(bytes));
  }

  async get(key: string): Promise<Buffer | undefined> {
    checkObjectKey(key);
    const object = this.#objects.get(key);
    return object && Buffer.from(object);
  }

  async *list(prefix: string): AsyncGenerator<ObjectEntry> {
    const entries = [...this.#objects].filter(([key]) => key.startsWith(prefix));
    for (const [key, object] of entries) yield { key, bytes: object.length };
  }

  async close(): Promise<void> {}

  #get(key: string): Buffer {
    checkObjectKey(key);
    const object = this.#objects.get(key);
    if (!object) throw objectMissing(this.name, key);
    return object;
  }
}

// encodeURIComponent never writes "%t", so these names can't collide with a key's file.
const TEMPORARY_PREFIX = "%tmp-";

/**
 * Objects as files under a root directory, one per key (keys are URI-encoded into file names, so a
 * key's encoding must fit the file system's name limit, 255 bytes on most).
 *
 * `putIfAbsent` writes and flushes a temporary file, then hard-links it to the key's name: `link()`
 * fails if the name exists, so it is atomic across processes sharing the directory, on any file
 * system with hard links (local POSIX ones, NFS). A writer that crashes may leave a `%tmp-*` file.
 */
export class DirectoryObjectStore implements ObjectStore {
  readonly name: string;
  readonly atomicPutIfAbsent = true;
  readonly #root: string;

  /** Does no I/O; `open` also checks that the directory can be written. */
  constructor(root: string) {
    this.#root = root;
    this.name = `directory ${root}`;
  }

  /**
   * Creates `root` if needed and writes and removes a probe file there. Throws "CONFIG_INVALID"
   * naming the directory when it cannot be created or written.
   */
  static async open(root: string): Promise<DirectoryObjectStore> {
    const probe = join(root, `${TEMPORARY_PREFIX}probe-${randomUUID()}`);
    try {
      await mkdir(root, { recursive: true });
      await writeFile(probe, "");
    } catch (cause) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        `the object store directory ${root} cannot be written (${errorCode(cause)}): give a directory this user may write`,
        { cause },
      );
    } finally {
      await rm(probe, { force: true }).catch(() => undefined);
    }
    return new DirectoryObjectStore(root);
  }

  async size(key: string): Promise<number> {
    try {
      return (await stat(this.#path(key))).size;
    } catch (cause) {
      throw this.#fileError(key, cause);
    }
  }

  async read(key: string, offset: number, target: Buffer): Promise<void> {
    try {
      await fileAccess(this.#path(key)).readInto(offset, target);
    } catch (cause) {
      throw this.#fileError(key, cause);
    }
  }

  async write(key: string, offset: number, bytes: Uint8Array): Promise<void> {
    try {
      const path = this.#path(key);
      await mkdir(this.#root, { recursive: true });
      await fileAccess(path).writeFrom(offset, bytes);
    } catch (cause) {
      throw this.#fileError(key, cause);
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await rm(this.#path(key), { force: true });
    } catch (cause) {
      throw this.#fileError(key, cause);
    }
  }

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    const path = this.#path(key);
    // Most puts of a deduplicated block find it there: skip writing it.
    if (await this.#exists(key, path)) return false;
    const temporary = join(this.#root, `${TEMPORARY_PREFIX}${randomUUID()}`);
    try {
      await mkdir(this.#root, { recursive: true });
      // Flushed before it gets its name, so a crash can't leave a named but empty object.
      await writeFile(temporary, bytes, { flush: true });
      await link(temporary, path);
      return true;
    } catch (cause) {
      if (errorCode(cause) === "EEXIST") return false;
      throw this.#fileError(key, cause);
    } finally {
      await rm(temporary, { force: true });
    }
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    const temporary = join(this.#root, `${TEMPORARY_PREFIX}${randomUUID()}`);
    try {
      await mkdir(this.#root, { recursive: true });
      await writeFile(temporary, bytes, { flush: true });
      // rename() replaces the name at once: a reader opens the old file or the new one.
      await rename(temporary, this.#path(key));
    } catch (cause) {
      await rm(temporary, { force: true });
      throw this.#fileError(key, cause);
    }
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      return await readFile(this.#path(key));
    } catch (cause) {
      if (errorCode(cause) === "ENOENT") return undefined;
      throw this.#fileError(key, cause);
    }
  }

  async *list(prefix: string): AsyncGenerator<ObjectEntry> {
    let directory: Awaited<ReturnType<typeof opendir>>;
    try {
      directory = await opendir(this.#root);
    } catch (cause) {
      if (errorCode(cause) === "ENOENT") return;
      throw this.#fileError(prefix, cause);
    }
    for await (const entry of directory) {
      if (!entry.isFile() || entry.name.startsWith(TEMPORARY_PREFIX)) continue;
      const key = decodeFileName(entry.name);
      if (key === undefined || !key.startsWith(prefix)) continue;
      const bytes = await stat(join(this.#root, entry.name)).then(
        (s) => s.size,
        () => undefined, // deleted while listing
      );
      if (bytes !== undefined) yield { key, bytes };
    }
  }

  async close(): Promise<void> {}

  async #exists(key: string, path: string): Promise<boolean> {
    try {
      await stat(path);
      return true;
    } catch (cause) {
      if (errorCode(cause) === "ENOENT") return false;
      throw this.#fileError(key, cause);
    }
  }

  #path(key: string): string {
    checkObjectKey(key);
    // "." and ".." would name the root and its parent.
    const name = encodeURIComponent(key).replace(/^\.{1,2}$/, (dots) => "%2E".repeat(dots.length));
    return join(this.#root, name);
  }

  #fileError(key: string, cause: unknown): ArmatureError {
    if (cause instanceof ArmatureError) return cause;
    const code = errorCode(cause);
    if (code === "ENOENT") return objectMissing(this.name, key, cause);
    const refused = code === "EACCES" || code === "EPERM" || code === "EROFS" || code === "ENAMETOOLONG";
    return new ArmatureError("TRANSFER_FAILED", `the ${this.name} store failed on object ${key} (${code})`, {
      cause,
      retryable: !refused,
    });
  }
}

/** Throws "TRANSFER_FAILED" (not retryable) for a key no store can hold. */
export function checkObjectKey(key: string): void {
  if (key.length === 0) throw new ArmatureError("TRANSFER_FAILED", "object keys must not be empty");
}

/** The error for a key that is not in the store: "TRANSFER_FAILED", not retryable. */
export function objectMissing(store: string, key: string, cause?: unknown): ArmatureError {
  return new ArmatureError("TRANSFER_FAILED", `object ${key} is not in the ${store} store`, { cause });
}

/** The error for a read past an object's end: "TRANSFER_FAILED", not retryable. */
export function missingRange(key: string, end: number, size: number): ArmatureError {
  return new ArmatureError("TRANSFER_FAILED", `object ${key} has ${size} bytes; byte ${end} was asked`);
}

function decodeFileName(name: string): string | undefined {
  try {
    return decodeURIComponent(name);
  } catch {
    return undefined; // not a file this store wrote
  }
}

function errorCode(cause: unknown): string {
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code : "unknown error";
}
