import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { buildTinyModel } from "./tiny-model.js";

/** Folder where armature keeps generated models: `ARMATURE_CACHE_DIR`, else `~/.cache/armature`. */
export function defaultCacheDir(): string {
  return process.env.ARMATURE_CACHE_DIR ?? join(homedir(), ".cache", "armature");
}

let built: Buffer | undefined;

/** The default tiny model's bytes, generated once per process (it takes a moment). */
function tinyModelBytes(): Buffer {
  built ??= buildTinyModel();
  return built;
}

/** Writes the tiny model to `path` atomically (temporary file, then rename). */
export async function writeTinyModel(path: string): Promise<void> {
  const bytes = tinyModelBytes();
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, bytes);
  await rename(temporary, path);
}

/**
 * Returns the path of the tiny model in the cache, creating it the first time. A file whose bytes
 * do not match what the generator writes is replaced.
 */
export async function ensureTinyModel(cacheDir = defaultCacheDir()): Promise<string> {
  await mkdir(cacheDir, { recursive: true });
  const path = join(cacheDir, "armature-tiny-v2.gguf");
  const expected = createHash("sha256").update(tinyModelBytes()).digest("hex");
  try {
    const actual = createHash("sha256")
      .update(await readFile(path))
      .digest("hex");
    if (actual === expected) return path;
  } catch {
    // Not there yet: create it below.
  }
  await writeTinyModel(path);
  return path;
}
