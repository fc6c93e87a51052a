import { join } from "node:path";
import { defaultCacheDir, installedTokenizer, installTokenizerBundle, type TokenizerBundle } from "../engines/index.js";
import {
  ArmatureError,
  MAX_TOKENIZER_FILE_BYTES,
  type ModelCard,
  subjects,
  type TokenizerSource,
  tokenizerFilePartSchema,
} from "../protocol/index.js";
import type { InvalidMessages, RequestPlane } from "../runtime/index.js";

/** Fetches a model's tokenizer bundle from one of its workers; resolves to where it loads here. */
export type TokenizerFetcher = (card: ModelCard, workerIds: readonly string[]) => Promise<TokenizerSource>;

/**
 * A fetcher over the request plane: asks each worker in turn (the next when one fails) for the
 * bundle its card names, checks every piece's schema, the pieces' order and sizes and the bundle's
 * hash, and installs it under `dir` (default `~/.cache/armature/tokenizers`) for later starts too.
 */
export function tokenizerFetcher(requests: RequestPlane, invalid: InvalidMessages, dir?: string): TokenizerFetcher {
  const cache = dir ?? join(defaultCacheDir(), "tokenizers");
  return async (card, workerIds) => {
    const source = card.tokenizer;
    if (source.kind === "bytes" || source.sha256 === undefined) {
      throw new ArmatureError("MODEL_LOAD_FAILED", `model ${card.name}: its workers name no tokenizer bundle to fetch`);
    }
    const installed = installedTokenizer(cache, source);
    if (installed) return installed;
    const failures: string[] = [];
    for (const workerId of workerIds) {
      try {
        const bundle = await receive(requests, invalid, workerId, source.sha256);
        return await installTokenizerBundle(cache, source, bundle);
      } catch (error) {
        failures.push(`${workerId}: ${(error as Error).message}`);
      }
    }
    throw new ArmatureError(
      "MODEL_LOAD_FAILED",
      `model ${card.name}: ${source.path} is not readable here and no worker handed out its tokenizer (${failures.join("; ") || "no worker"})`,
    );
  };
}

async function receive(
  requests: RequestPlane,
  invalid: InvalidMessages,
  workerId: string,
  sha256: string,
): Promise<TokenizerBundle> {
  const address = subjects.tokenizer(workerId);
  const files = new Map<string, { bytes: Buffer; filled: number }>();
  let total = 0;
  for await (const item of requests.call(address, { type: "tokenizer-request", sha256 })) {
    const part = invalid.check("tokenizer-file", tokenizerFilePartSchema, item, address);
    let file = files.get(part.name);
    if (!file) {
      total += part.size;
      if (total > MAX_TOKENIZER_FILE_BYTES) throw new Error(`a tokenizer bundle over ${MAX_TOKENIZER_FILE_BYTES} bytes`);
      file = { bytes: Buffer.alloc(part.size), filled: 0 };
      files.set(part.name, file);
    }
    const data = Buffer.from(part.data, "base64");
    if (part.offset !== file.filled || part.size !== file.bytes.length || part.offset + data.length > part.size) {
      throw new Error(`${part.name}: a piece out of order or of the wrong size`);
    }
    data.copy(file.bytes, part.offset);
    file.filled += data.length;
  }
  for (const [name, file] of files) if (file.filled !== file.bytes.length) throw new Error(`${name} came incomplete`);
  return { sha256, files: [...files].map(([name, file]) => ({ name, bytes: file.bytes })) };
}
