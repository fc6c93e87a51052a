import { ArmatureError } from "../../protocol/index.js";
import type { ObjectStore } from "../../transfer/index.js";
import type { FileObject } from "./batch-objects.js";
import {
  BATCH_ID,
  type BatchStore,
  FILE_ID,
  fileObject,
  newestBatches,
  newestFiles,
  newFileId,
  type ResultKind,
  type StoredBatch,
  type StoredFile,
} from "./batch-store.js";

/** Who runs a store's batches when several frontend processes share it (a claim in discovery). */
export interface RunnerLock {
  acquire(): Promise<boolean>;
  release(): Promise<void>;
}

/** Keys under the store's `batches/`: files, batch objects, and each running batch's result pieces. */
const PREFIX = "batches/";
/** Digits of a result piece's number: keys sort in the order the pieces were written. */
const PIECE_DIGITS = 10;

/**
 * Batches and their files in an object store (S3, NATS JetStream, a shared folder: the KV block
 * manager's `--kv-object-store`), so a batch survives its process and its host. Files are
 * `batches/files/ID.jsonl` with their object in `ID.json`; a batch's object is
 * `batches/batches/ID.json`, replaced whole on each save; a running batch's results are pieces
 * written once each (`batches/results/ID/output/0000000001.jsonl`, `…/errors/…`), since objects
 * cannot be appended to, and become one file when the batch ends. A piece is whole or absent, so a
 * kill never leaves half a line. The runner lock is a claim in discovery, held by one frontend.
 */
export class ObjectBatchStore implements BatchStore {
  readonly #store: ObjectStore;
  readonly #lock: RunnerLock;
  /** The next piece number of each running batch's results, by `batchId/kind` (read from the store once). */
  readonly #nextPiece = new Map<string, Promise<{ next: number }>>();

  constructor(store: ObjectStore, lock: RunnerLock) {
    this.#store = store;
    this.#lock = lock;
  }

  /** Where the batches are, for the start line and errors. */
  get location(): string {
    return `${this.#store.name} under ${PREFIX}`;
  }

  acquireRunnerLock(): Promise<boolean> {
    return this.#lock.acquire();
  }

  releaseRunnerLock(): Promise<void> {
    return this.#lock.release();
  }

  async addFile(
    content: Uint8Array,
    filename: string,
    purpose: FileObject["purpose"],
    owner: string | null,
  ): Promise<FileObject> {
    const id = newFileId();
    await this.#store.put(fileKey(id, "jsonl"), content);
    const file = fileObject(id, content.byteLength, filename, purpose);
    await this.#putJson(fileKey(id, "json"), { file, owner } satisfies StoredFile);
    return file;
  }

  async file(id: string): Promise<StoredFile | undefined> {
    if (!FILE_ID.test(id)) return undefined;
    return this.#getJson<StoredFile>(fileKey(id, "json"));
  }

  async fileContent(id: string): Promise<Buffer> {
    return (await this.#store.get(fileKey(id, "jsonl"))) ?? Buffer.alloc(0);
  }

  async deleteFile(id: string): Promise<void> {
    await this.#store.delete(fileKey(id, "json"));
    await this.#store.delete(fileKey(id, "jsonl"));
  }

  async listFiles(): Promise<StoredFile[]> {
    const files: StoredFile[] = [];
    for (const key of await this.#keys(`${PREFIX}files/`)) {
      if (!key.endsWith(".json")) continue;
      const stored = await this.#getJson<StoredFile>(key);
      if (stored) files.push(stored);
    }
    return newestFiles(files);
  }

  async saveBatch(stored: StoredBatch): Promise<void> {
    await this.#putJson(batchKey(stored.batch.id), stored);
  }

  async batch(id: string): Promise<StoredBatch | undefined> {
    if (!BATCH_ID.test(id)) return undefined;
    return this.#getJson<StoredBatch>(batchKey(id));
  }

  async listBatches(): Promise<StoredBatch[]> {
    const batches: StoredBatch[] = [];
    for (const key of await this.#keys(`${PREFIX}batches/`)) {
      if (!/\/batch_[0-9a-f]{24}\.json$/.test(key)) continue;
      const stored = await this.#getJson<StoredBatch>(key);
      if (stored) batches.push(stored);
    }
    return newestBatches(batches);
  }

  async appendResults(batchId: string, kind: ResultKind, text: string): Promise<void> {
    const key = pieceKey(batchId, kind, await this.#claimPiece(batchId, kind));
    if (!(await this.#store.putIfAbsent(key, Buffer.from(text)))) {
      throw new ArmatureError(
        "TRANSFER_FAILED",
        `${this.#store.name}: result piece ${key} exists already; another process writes this batch's results`,
      );
    }
  }

  async results(batchId: string, kind: ResultKind): Promise<string[]> {
    return (await this.#joined(await this.#pieces(batchId, kind)))
      .toString("utf8")
      .split("\n")
      .filter((line) => line !== "");
  }

  async clearResults(batchId: string): Promise<void> {
    for (const kind of ["output", "errors"] as const) {
      for (const key of await this.#pieces(batchId, kind)) await this.#store.delete(key);
      this.#nextPiece.delete(`${batchId}/${kind}`);
    }
  }

  async promoteResults(batchId: string, kind: ResultKind, owner: string | null): Promise<FileObject | undefined> {
    const pieces = await this.#pieces(batchId, kind);
    const bytes = firstLinePerRequest(await this.#joined(pieces));
    if (bytes.length === 0) return undefined;
    const id = newFileId();
    await this.#store.put(fileKey(id, "jsonl"), bytes);
    const file = fileObject(id, bytes.length, `${batchId}_${kind === "output" ? "output" : "error"}.jsonl`, "batch_output");
    await this.#putJson(fileKey(id, "json"), { file, owner } satisfies StoredFile);
    for (const key of pieces) await this.#store.delete(key);
    this.#nextPiece.delete(`${batchId}/${kind}`);
    return file;
  }

  /** Closes the object store (the runner gives up its lock when it stops). */
  async close(): Promise<void> {
    await this.#store.close();
  }

  /** A piece number no other append of this process takes (appends run concurrently). */
  async #claimPiece(batchId: string, kind: ResultKind): Promise<number> {
    const counter = `${batchId}/${kind}`;
    let known = this.#nextPiece.get(counter);
    if (!known) {
      known = this.#pieces(batchId, kind).then((pieces) => ({
        next: pieces.length === 0 ? 1 : pieceNumber(pieces.at(-1) as string) + 1,
      }));
      this.#nextPiece.set(counter, known);
    }
    const piece = await known;
    return piece.next++;
  }

  /** The result pieces of a batch's `kind`, in the order they were written. */
  async #pieces(batchId: string, kind: ResultKind): Promise<string[]> {
    return (await this.#keys(`${PREFIX}results/${batchId}/${kind}/`)).sort();
  }

  /** The pieces' bytes, one after another. */
  async #joined(pieces: readonly string[]): Promise<Buffer> {
    const parts: Buffer[] = [];
    for (const key of pieces) {
      const piece = await this.#store.get(key);
      if (piece) parts.push(piece);
    }
    return Buffer.concat(parts);
  }

  async #keys(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const entry of this.#store.list(prefix)) keys.push(entry.key);
    return keys;
  }

  async #putJson(key: string, value: unknown): Promise<void> {
    await this.#store.put(key, Buffer.from(JSON.stringify(value)));
  }

  async #getJson<T>(key: string): Promise<T | undefined> {
    const bytes = await this.#store.get(key);
    return bytes === undefined ? undefined : (JSON.parse(bytes.toString("utf8")) as T);
  }
}

function fileKey(id: string, extension: string): string {
  return `${PREFIX}files/${id}.${extension}`;
}

function batchKey(id: string): string {
  return `${PREFIX}batches/${id}.json`;
}

/**
 * The result lines with only the first of each request's (`id`); lines without one all stay. A
 * process killed while a piece was on its way can have that piece land after the process that
 * resumed the batch read its results: the request ran again there, and its line would be in the
 * file twice (seen with s3rver under load).
 */
export function firstLinePerRequest(bytes: Buffer): Buffer {
  const seen = new Set<string>();
  let repeated = false;
  const kept: string[] = [];
  for (const line of bytes.toString("utf8").split("\n")) {
    if (line === "") continue;
    let id: unknown;
    try {
      id = (JSON.parse(line) as { id?: unknown }).id;
    } catch {
      id = undefined;
    }
    if (typeof id === "string") {
      if (seen.has(id)) {
        repeated = true;
        continue;
      }
      seen.add(id);
    }
    kept.push(`${line}\n`);
  }
  return repeated ? Buffer.from(kept.join(""), "utf8") : bytes;
}

function pieceKey(batchId: string, kind: ResultKind, piece: number): string {
  return `${PREFIX}results/${batchId}/${kind}/${String(piece).padStart(PIECE_DIGITS, "0")}.jsonl`;
}

function pieceNumber(key: string): number {
  return Number(key.slice(key.lastIndexOf("/") + 1, -".jsonl".length));
}
