import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { buildTinyLora } from "./tiny-lora.js";
import { buildTinyModel } from "./tiny-model.js";
import { buildTinyRanker } from "./tiny-ranker.js";

/** Folder where armature keeps generated models: `ARMATURE_CACHE_DIR`, else `~/.cache/armature`. */
export function defaultCacheDir(): string {
  return process.env.ARMATURE_CACHE_DIR ?? join(homedir(), ".cache", "armature");
}

let builtModel: Buffer | undefined;
let builtLora: Buffer | undefined;
let builtRanker: Buffer | undefined;

/** The default tiny model's bytes, generated once per process (it takes a moment). */
function tinyModelBytes(): Buffer {
  builtModel ??= buildTinyModel();
  return builtModel;
}

/** The tiny model's LoRA adapter's bytes, generated once per process. */
function tinyLoraBytes(): Buffer {
  builtLora ??= buildTinyLora();
  return builtLora;
}

/** The tiny ranking model's bytes, generated once per process. */
function tinyRankerBytes(): Buffer {
  builtRanker ??= buildTinyRanker();
  return builtRanker;
}

/** Writes the tiny model to `path` atomically (temporary file, then rename). */
export function writeTinyModel(path: string): Promise<void> {
  return writeAtomically(path, tinyModelBytes());
}

/** Writes the tiny model's LoRA adapter (see `buildTinyLora`) to `path` atomically. */
export function writeTinyLora(path: string): Promise<void> {
  return writeAtomically(path, tinyLoraBytes());
}

/** Writes the tiny ranking model (see `buildTinyRanker`) to `path` atomically. */
export function writeTinyRanker(path: string): Promise<void> {
  return writeAtomically(path, tinyRankerBytes());
}

/**
 * Returns the path of the tiny model in the cache, creating it the first time. A file whose bytes
 * do not match what the generator writes is replaced.
 */
export function ensureTinyModel(cacheDir = defaultCacheDir()): Promise<string> {
  return ensureGenerated(cacheDir, "armature-tiny-v2.gguf", tinyModelBytes());
}

/** As `ensureTinyModel`, for the tiny model's LoRA adapter. */
export function ensureTinyLora(cacheDir = defaultCacheDir()): Promise<string> {
  return ensureGenerated(cacheDir, "armature-tiny-v2-lora.gguf", tinyLoraBytes());
}

/** As `ensureTinyModel`, for the tiny ranking model. */
export function ensureTinyRanker(cacheDir = defaultCacheDir()): Promise<string> {
  return ensureGenerated(cacheDir, "armature-tiny-v2-ranker.gguf", tinyRankerBytes());
}

async function ensureGenerated(cacheDir: string, name: string, bytes: Buffer): Promise<string> {
  await mkdir(cacheDir, { recursive: true });
  const path = join(cacheDir, name);
  const expected = createHash("sha256").update(bytes).digest("hex");
  try {
    const actual = createHash("sha256")
      .update(await readFile(path))
      .digest("hex");
    if (actual === expected) return path;
  } catch {
    // Not there yet: create it below.
  }
  await writeAtomically(path, bytes);
  return path;
}

async function writeAtomically(path: string, bytes: Buffer): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, bytes);
  await rename(temporary, path);
}
