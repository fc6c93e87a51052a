import { randomBytes } from "node:crypto";
import { appendFile, mkdir, open, readdir, readFile, rename, rm, stat, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ArmatureError } from "../../protocol/index.js";
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

/**
 * Batches and their files on disk (`--batch-dir`), so that a batch survives the process: uploaded
 * and written files under `files/` (`ID.jsonl` and its object in `ID.json`), each batch's object in
 * `batches/ID.json`, and the results of a running batch appended line by line to
 * `batches/ID.output.jsonl` and `batches/ID.errors.jsonl`. Objects are replaced whole (written
 * beside, then renamed over), so a kill leaves the old one or the new one; a result line cut short
 * by a kill is dropped when the batch resumes.
 */
export class DirectoryBatchStore implements BatchStore {
  readonly #dir: string;

  private constructor(dir: string) {
    this.#dir = dir;
  }

  static async open(dir: string): Promise<DirectoryBatchStore> {
    try {
      await mkdir(join(dir, "files"), { recursive: true, mode: 0o700 });
      await mkdir(join(dir, "batches"), { recursive: true, mode: 0o700 });
    } catch (cause) {
      throw new ArmatureError("CONFIG_INVALID", `--batch-dir ${dir} cannot be created or written (${(cause as Error).message})`, {
        cause,
      });
    }
    return new DirectoryBatchStore(dir);
  }

  /**
   * Makes this process the one that runs the directory's batches (`runner.lock` holds its pid);
   * false when a live process holds it. A lock left by a process that died is taken over.
   */
  async acquireRunnerLock(): Promise<boolean> {
    const path = join(this.#dir, "runner.lock");
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const handle = await open(path, "wx", 0o600);
        await handle.writeFile(String(process.pid));
        await handle.close();
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = Number((await readFile(path, "utf8").catch(() => "")).trim());
      if (holder === process.pid) return true;
      if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) return false;
      await rm(path, { force: true });
    }
    return false;
  }

  /** Lets go of the runner lock, when this process holds it. */
  async releaseRunnerLock(): Promise<void> {
    const path = join(this.#dir, "runner.lock");
    const holder = Number((await readFile(path, "utf8").catch(() => "")).trim());
    if (holder === process.pid) await rm(path, { force: true });
  }

  async addFile(
    content: Uint8Array,
    filename: string,
    purpose: FileObject["purpose"],
    owner: string | null,
  ): Promise<FileObject> {
    const id = newFileId();
    await writeFile(this.#filePath(id, "jsonl"), content, { mode: 0o600 });
    const file = fileObject(id, content.byteLength, filename, purpose);
    await this.#writeJson(this.#filePath(id, "json"), { file, owner } satisfies StoredFile);
    return file;
  }

  async file(id: string): Promise<StoredFile | undefined> {
    if (!FILE_ID.test(id)) return undefined;
    return this.#readJson<StoredFile>(this.#filePath(id, "json"));
  }

  async fileContent(id: string): Promise<Buffer> {
    return readFile(this.#filePath(id, "jsonl"));
  }

  async deleteFile(id: string): Promise<void> {
    await rm(this.#filePath(id, "json"), { force: true });
    await rm(this.#filePath(id, "jsonl"), { force: true });
  }

  async listFiles(): Promise<StoredFile[]> {
    const names = await readdir(join(this.#dir, "files"));
    const files: StoredFile[] = [];
    for (const name of names) {
      if (!name.endsWith(".json")) continue;
      const stored = await this.#readJson<StoredFile>(join(this.#dir, "files", name));
      if (stored) files.push(stored);
    }
    return newestFiles(files);
  }

  async saveBatch(stored: StoredBatch): Promise<void> {
    await this.#writeJson(this.#batchPath(stored.batch.id, "json"), stored);
  }

  async batch(id: string): Promise<StoredBatch | undefined> {
    if (!BATCH_ID.test(id)) return undefined;
    return this.#readJson<StoredBatch>(this.#batchPath(id, "json"));
  }

  async listBatches(): Promise<StoredBatch[]> {
    const names = await readdir(join(this.#dir, "batches"));
    const batches: StoredBatch[] = [];
    for (const name of names) {
      if (!/^batch_[0-9a-f]{24}\.json$/.test(name)) continue;
      const stored = await this.#readJson<StoredBatch>(join(this.#dir, "batches", name));
      if (stored) batches.push(stored);
    }
    return newestBatches(batches);
  }

  /** Appends result lines (each ending in a newline) to a running batch's output or error results. */
  async appendResults(batchId: string, kind: ResultKind, text: string): Promise<void> {
    await appendFile(this.#batchPath(batchId, `${kind}.jsonl`), text, { mode: 0o600 });
  }

  /**
   * The result lines a batch wrote so far, each kind apart; a last line cut short by a kill is
   * dropped from the file first, so that its request runs again.
   */
  async results(batchId: string, kind: ResultKind): Promise<string[]> {
    const path = this.#batchPath(batchId, `${kind}.jsonl`);
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    const end = text.lastIndexOf("\n") + 1;
    if (end < text.length) await truncate(path, Buffer.byteLength(text.slice(0, end)));
    return text
      .slice(0, end)
      .split("\n")
      .filter((line) => line !== "");
  }

  /** Forgets a batch's results (a validation that starts over). */
  async clearResults(batchId: string): Promise<void> {
    for (const kind of ["output", "errors"] as const) await rm(this.#batchPath(batchId, `${kind}.jsonl`), { force: true });
  }

  /**
   * Turns a batch's results of `kind` into a file of its own (purpose `batch_output`), owned as the
   * batch is; undefined when it wrote none of that kind.
   */
  async promoteResults(batchId: string, kind: ResultKind, owner: string | null): Promise<FileObject | undefined> {
    const from = this.#batchPath(batchId, `${kind}.jsonl`);
    let bytes: number;
    try {
      bytes = (await stat(from)).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    if (bytes === 0) return undefined;
    const id = newFileId();
    await rename(from, this.#filePath(id, "jsonl"));
    const file = fileObject(id, bytes, `${batchId}_${kind === "output" ? "output" : "error"}.jsonl`, "batch_output");
    await this.#writeJson(this.#filePath(id, "json"), { file, owner } satisfies StoredFile);
    return file;
  }

  async close(): Promise<void> {}

  #filePath(id: string, extension: string): string {
    return join(this.#dir, "files", `${id}.${extension}`);
  }

  #batchPath(id: string, extension: string): string {
    return join(this.#dir, "batches", `${id}.${extension}`);
  }

  async #writeJson(path: string, value: unknown): Promise<void> {
    const temporary = `${path}.${randomBytes(4).toString("hex")}.tmp`;
    await writeFile(temporary, JSON.stringify(value), { mode: 0o600 });
    await rename(temporary, path);
  }

  async #readJson<T>(path: string): Promise<T | undefined> {
    try {
      return JSON.parse(await readFile(path, "utf8")) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
