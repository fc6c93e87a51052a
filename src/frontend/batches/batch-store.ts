import { randomBytes } from "node:crypto";
import type { BatchObject, FileObject } from "./batch-objects.js";

/** A file as stored: OpenAI's object and the API key that owns it (null without keys). */
export interface StoredFile {
  readonly file: FileObject;
  readonly owner: string | null;
}

/** A batch as stored: OpenAI's object and the API key that owns it (null without keys). */
export interface StoredBatch {
  readonly batch: BatchObject;
  readonly owner: string | null;
}

/** The two result files a batch writes while it runs, before they become files of their own. */
export type ResultKind = "output" | "errors";

/**
 * Where batches and their files live so that a batch survives the process that ran it: a folder
 * (`DirectoryBatchStore`, `--batch-dir`) or an object store (`ObjectBatchStore`, the KV block
 * manager's `--kv-object-store`). One process of those sharing a store runs its batches (the
 * runner lock); the others store and serve them.
 */
export interface BatchStore {
  /** Makes this process the one that runs the store's batches; false when another live one is. */
  acquireRunnerLock(): Promise<boolean>;
  /** Lets go of the runner lock, when this process holds it. */
  releaseRunnerLock(): Promise<void>;
  addFile(content: Uint8Array, filename: string, purpose: FileObject["purpose"], owner: string | null): Promise<FileObject>;
  file(id: string): Promise<StoredFile | undefined>;
  fileContent(id: string): Promise<Buffer>;
  deleteFile(id: string): Promise<void>;
  /** Newest first. */
  listFiles(): Promise<StoredFile[]>;
  /** Replaces the batch's stored object whole (a kill leaves the old one or the new one). */
  saveBatch(stored: StoredBatch): Promise<void>;
  batch(id: string): Promise<StoredBatch | undefined>;
  /** Newest first. */
  listBatches(): Promise<StoredBatch[]>;
  /** Appends result lines (each ending in a newline) to a running batch's output or error results. */
  appendResults(batchId: string, kind: ResultKind, text: string): Promise<void>;
  /** The whole result lines a batch wrote so far, each kind apart (a line cut short by a kill is dropped). */
  results(batchId: string, kind: ResultKind): Promise<string[]>;
  /** Forgets a batch's results (a validation that starts over). */
  clearResults(batchId: string): Promise<void>;
  /**
   * Turns a batch's results of `kind` into a file of its own (purpose `batch_output`), owned as the
   * batch is; undefined when it wrote none of that kind.
   */
  promoteResults(batchId: string, kind: ResultKind, owner: string | null): Promise<FileObject | undefined>;
  /** Lets go of what the store holds open (an object store's connections). */
  close(): Promise<void>;
}

export const FILE_ID = /^file-[0-9a-f]{24}$/;
export const BATCH_ID = /^batch_[0-9a-f]{24}$/;

export function newFileId(): string {
  return `file-${randomBytes(12).toString("hex")}`;
}

export function newBatchId(): string {
  return `batch_${randomBytes(12).toString("hex")}`;
}

/** OpenAI's file object for a file stored now. */
export function fileObject(id: string, bytes: number, filename: string, purpose: FileObject["purpose"]): FileObject {
  return {
    id,
    object: "file",
    bytes,
    created_at: Math.floor(Date.now() / 1000),
    filename,
    purpose,
    status: "processed",
    expires_at: null,
    status_details: null,
  };
}

/** Newest first, then by id. */
export function newestFiles(files: StoredFile[]): StoredFile[] {
  return files.sort((a, b) => b.file.created_at - a.file.created_at || (a.file.id < b.file.id ? -1 : 1));
}

/** Newest first, then by id. */
export function newestBatches(batches: StoredBatch[]): StoredBatch[] {
  return batches.sort((a, b) => b.batch.created_at - a.batch.created_at || (a.batch.id < b.batch.id ? -1 : 1));
}
