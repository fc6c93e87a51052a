import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { TokenizerSource } from "../protocol/index.js";
import { vocabOnlyGguf } from "./llamacpp/vocab-gguf.js";

/** A model's tokenizer as files a frontend can load without the model: what a worker hands out. */
export interface TokenizerBundle {
  /** `bundleHash` of the files: the card names the tokenizer by it. */
  readonly sha256: string;
  readonly files: readonly { readonly name: string; readonly bytes: Buffer }[];
}

/** The files of a Hugging Face tokenizer folder that tokenizing and templating read. */
const FOLDER_FILES = [
  "tokenizer.json",
  "tokenizer_config.json",
  "chat_template.jinja",
  "chat_template.json",
  "generation_config.json",
  "special_tokens_map.json",
];

/** The vocabulary-only GGUF's name in a bundle. */
const VOCAB_GGUF = "vocab.gguf";

/**
 * The bundle of a worker's tokenizer: a GGUF's metadata without its tensors (`vocab.gguf`), or a
 * folder's tokenizer files; none for the mocker's byte tokenizer, which every process has.
 */
export async function readTokenizerBundle(source: TokenizerSource): Promise<TokenizerBundle | undefined> {
  if (source.kind === "bytes") return undefined;
  const files =
    source.kind === "gguf"
      ? [{ name: VOCAB_GGUF, bytes: await vocabOnlyGguf(source.path) }]
      : await Promise.all(
          FOLDER_FILES.filter((name) => existsSync(join(source.path, name))).map(async (name) => ({
            name,
            bytes: await readFile(join(source.path, name)),
          })),
        );
  return { sha256: bundleHash(files), files };
}

/** Bundles read in this process, by source: its workers and its frontend share one copy. */
const readInProcess = new Map<string, Promise<TokenizerBundle | undefined>>();

/**
 * The bundle of `source` as this process read it first (a few megabytes, kept: what a worker hands
 * out is what it registered, whatever happens to the files after; a frontend beside it checks its
 * card against the same copy instead of reading the files again).
 */
export function processTokenizerBundle(source: TokenizerSource): Promise<TokenizerBundle | undefined> {
  const key = JSON.stringify(source);
  let bundle = readInProcess.get(key);
  if (!bundle) {
    bundle = readTokenizerBundle(source);
    bundle.catch(() => readInProcess.delete(key));
    readInProcess.set(key, bundle);
  }
  return bundle;
}

/** SHA-256 over each file's name, length and bytes, in name order. */
export function bundleHash(files: readonly { readonly name: string; readonly bytes: Uint8Array }[]): string {
  const hash = createHash("sha256");
  for (const file of [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    hash.update(`${file.name}\0${file.bytes.length}\0`);
    hash.update(file.bytes);
  }
  return hash.digest("hex");
}

/** Where a bundle installed under `dir` loads from. */
function installedSource(dir: string, kind: "gguf" | "huggingface", sha256: string): TokenizerSource {
  const target = join(dir, sha256);
  return kind === "gguf" ? { kind, path: join(target, VOCAB_GGUF), sha256 } : { kind, path: target, sha256 };
}

/** The bundle `source` names, installed under `dir` by an earlier fetch; undefined where it is not. */
export function installedTokenizer(
  dir: string,
  source: Exclude<TokenizerSource, { kind: "bytes" }>,
): TokenizerSource | undefined {
  if (source.sha256 === undefined || !/^[0-9a-f]{64}$/.test(source.sha256)) return undefined;
  return existsSync(join(dir, source.sha256)) ? installedSource(dir, source.kind, source.sha256) : undefined;
}

/**
 * Writes a bundle received for `source` under `dir/<sha256>/` (whole, then renamed into place, so
 * a reader never sees half of one) after checking its hash, and returns the source that loads it
 * here. A bundle already there is reused.
 */
export async function installTokenizerBundle(
  dir: string,
  source: Exclude<TokenizerSource, { kind: "bytes" }>,
  bundle: TokenizerBundle,
): Promise<TokenizerSource> {
  const sha256 = bundleHash(bundle.files);
  if (sha256 !== bundle.sha256 || (source.sha256 !== undefined && sha256 !== source.sha256)) {
    throw new Error(`the tokenizer files received hash to ${sha256}, not ${source.sha256 ?? bundle.sha256}`);
  }
  for (const file of bundle.files) {
    const allowed = source.kind === "gguf" ? file.name === VOCAB_GGUF : FOLDER_FILES.includes(file.name);
    if (!allowed) throw new Error(`a tokenizer bundle may not hold ${JSON.stringify(file.name).slice(0, 80)}`);
  }
  const target = join(dir, sha256);
  const local = (): TokenizerSource => installedSource(dir, source.kind, sha256);
  if (existsSync(target)) return local();
  const staging = `${target}.${process.pid}.${Date.now()}.partial`;
  await mkdir(staging, { recursive: true });
  try {
    for (const file of bundle.files) await writeFile(join(staging, file.name), file.bytes);
    await rename(staging, target).catch(async (error: NodeJS.ErrnoException) => {
      // Another process installed the same bundle first.
      if (!existsSync(target)) throw error;
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return local();
}
