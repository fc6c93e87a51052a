import { ArmatureError } from "../protocol/index.js";

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
