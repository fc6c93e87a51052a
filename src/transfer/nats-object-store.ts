import { JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import type { ObjectStore as NatsBucket, ObjectInfo } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { ArmatureError } from "../protocol/index.js";
import { checkObjectKey, missingRange, type ObjectEntry, type ObjectStore, objectMissing } from "./object-store.js";

/** A JetStream object store bucket on the bus. */
export interface NatsObjectStoreOptions {
  /** Letters, digits, `-` and `_`. Created when missing (the stream `OBJ_<bucket>`). */
  readonly bucket: string;
  /** Where the server keeps a bucket this call creates. Default "file". */
  readonly storage?: "file" | "memory" | undefined;
  /** Copies of a bucket this call creates, in a JetStream cluster. Default 1. */
  readonly replicas?: number | undefined;
  /** Size limit of a bucket this call creates. Default none. */
  readonly maxBytes?: number | undefined;
  /** How long one JetStream request may take. Default 5000. */
  readonly timeoutMs?: number | undefined;
}

/** A put or write lost to another writer this many times in a row gives up (retryable). */
const CONFLICT_ATTEMPTS = 5;

/** What JetStream accepts as an object store bucket name. */
export const NATS_BUCKET_NAME = /^[-\w]+$/;

/**
 * Objects in a NATS JetStream object store bucket, chunked by the server's client library (128 KiB
 * chunks) and checked against their SHA-256 digest on every read.
 *
 * `putIfAbsent` is atomic across all clients: it publishes the object's metadata with
 * `Nats-Expected-Last-Subject-Sequence` (0, or the revision of a delete marker), so the server
 * accepts exactly one of racing writers; a loser's chunks are purged. A loser still uploads its
 * chunks before it loses, which `info()` first avoids in the common case of a present object.
 * `read` fetches the whole object and copies the range; `write` rewrites the whole object, retrying
 * when another writer changed it meanwhile.
 */
export class NatsObjectStore implements ObjectStore {
  readonly name: string;
  readonly atomicPutIfAbsent = true;
  readonly #bucket: NatsBucket;

  /** Use `open`. */
  private constructor(bucket: NatsBucket, name: string) {
    this.#bucket = bucket;
    this.name = `nats bucket ${name}`;
  }

  /**
   * Opens the bucket on `connection`, creating it when missing; the connection stays the caller's.
   * Throws "CONFIG_INVALID" for a bad bucket name or a server without JetStream, "TRANSFER_FAILED"
   * (retryable) when the server does not answer.
   */
  static async open(connection: NatsConnection, options: NatsObjectStoreOptions): Promise<NatsObjectStore> {
    if (!NATS_BUCKET_NAME.test(options.bucket)) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        `NATS object store bucket names are letters, digits, '-' and '_'; got '${options.bucket}'`,
      );
    }
    const timeout = options.timeoutMs ?? 5000;
    try {
      await jetstreamManager(connection, { timeout });
    } catch (cause) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        `the NATS object store ${options.bucket} needs JetStream: start nats-server with -js (and a store directory, -sd DIR)`,
        { cause },
      );
    }
    try {
      const { Objm } = await import("@nats-io/obj");
      const bucket = await new Objm(jetstream(connection, { timeout })).create(options.bucket, {
        storage: options.storage === "memory" ? StorageType.Memory : StorageType.File,
        replicas: options.replicas ?? 1,
        ...(options.maxBytes === undefined ? {} : { max_bytes: options.maxBytes }),
      });
      return new NatsObjectStore(bucket, options.bucket);
    } catch (cause) {
      throw new ArmatureError(
        "TRANSFER_FAILED",
        `cannot open the NATS object store bucket ${options.bucket}: ${errorMessage(cause)}`,
        { cause, retryable: !(cause instanceof JetStreamApiError) },
      );
    }
  }

  async size(key: string): Promise<number> {
    const info = await this.#info(key);
    if (!info) throw objectMissing(this.name, key);
    return info.size;
  }

  async read(key: string, offset: number, target: Buffer): Promise<void> {
    const object = await this.get(key);
    if (!object) throw objectMissing(this.name, key);
    const end = offset + target.length;
    if (end > object.length) throw missingRange(key, end, object.length);
    object.copy(target, 0, offset, end);
  }

  async write(key: string, offset: number, bytes: Uint8Array): Promise<void> {
    checkObjectKey(key);
    for (let attempt = 1; attempt <= CONFLICT_ATTEMPTS; attempt++) {
      const info = await this.#rawInfo(key);
      const existing = (info && !info.deleted && (await this.get(key))) || Buffer.alloc(0);
      const object =
        existing.length >= offset + bytes.length
          ? existing
          : Buffer.concat([existing, Buffer.alloc(offset + bytes.length - existing.length)]);
      object.set(bytes, offset);
      if (await this.#putAfter(key, object, info?.revision ?? 0)) return;
    }
    throw conflict(this.name, key);
  }

  async delete(key: string): Promise<void> {
    checkObjectKey(key);
    await this.#call("delete", key, () => this.#bucket.delete(key));
  }

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    checkObjectKey(key);
    for (let attempt = 1; attempt <= CONFLICT_ATTEMPTS; attempt++) {
      const info = await this.#rawInfo(key);
      if (info && !info.deleted) return false;
      // Lost only when another writer put or deleted the key since `info`: look again.
      if (await this.#putAfter(key, bytes, info?.revision ?? 0)) return true;
    }
    throw conflict(this.name, key);
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    checkObjectKey(key);
    await this.#call("put", key, () => this.#bucket.putBlob({ name: key }, bytes));
  }

  async get(key: string): Promise<Buffer | undefined> {
    checkObjectKey(key);
    const bytes = await this.#call("get", key, () => this.#bucket.getBlob(key));
    return bytes ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : undefined;
  }

  async *list(prefix: string): AsyncGenerator<ObjectEntry> {
    // The library reads every object's metadata from the bucket's history in one pass.
    const infos = await this.#call("list", `${prefix}*`, () => this.#bucket.list());
    for (const info of infos) {
      if (!info.deleted && info.name.startsWith(prefix)) yield { key: info.name, bytes: info.size };
    }
  }

  /** The bus connection is the caller's to close. */
  async close(): Promise<void> {}

  /** Puts `bytes` if the key's metadata is still at `revision` (0: never written); false if not. */
  async #putAfter(key: string, bytes: Uint8Array, revision: number): Promise<boolean> {
    try {
      await this.#bucket.putBlob({ name: key }, bytes, { previousRevision: revision });
      return true;
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence) return false;
      throw this.#failure("put", key, error);
    }
  }

  async #info(key: string): Promise<ObjectInfo | undefined> {
    const info = await this.#rawInfo(key);
    return info && !info.deleted ? info : undefined;
  }

  /** The key's latest metadata, delete markers included. */
  async #rawInfo(key: string): Promise<ObjectInfo | undefined> {
    checkObjectKey(key);
    return (await this.#call("info", key, () => this.#bucket.info(key))) ?? undefined;
  }

  async #call<T>(operation: string, key: string, body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (error) {
      throw this.#failure(operation, key, error);
    }
  }

  #failure(operation: string, key: string, error: unknown): ArmatureError {
    if (error instanceof ArmatureError) return error;
    // API errors are the server's answer; anything else (timeout, closed connection) is the bus.
    const retryable = !(error instanceof JetStreamApiError) || error.status >= 500;
    return new ArmatureError("TRANSFER_FAILED", `${operation} of ${key} in the ${this.name} failed: ${errorMessage(error)}`, {
      cause: error,
      retryable,
    });
  }
}

function conflict(store: string, key: string): ArmatureError {
  return new ArmatureError(
    "TRANSFER_FAILED",
    `object ${key} in the ${store} changed under ${CONFLICT_ATTEMPTS} writes in a row; try again`,
    { retryable: true },
  );
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}
