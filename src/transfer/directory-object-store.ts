import { randomUUID } from "node:crypto";
import { link, mkdir, opendir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ArmatureError } from "../protocol/index.js";
import { checkObjectKey, type ObjectEntry, type ObjectStore, objectMissing } from "./object-store.js";
import { fileAccess } from "./regions.js";

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
