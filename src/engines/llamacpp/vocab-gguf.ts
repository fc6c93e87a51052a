import { open } from "node:fs/promises";

/** GGUF value types (ggml's `gguf_type`) and the bytes of the fixed-size ones. */
const FIXED_SIZE: Readonly<Record<number, number>> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const STRING = 8;
const ARRAY = 9;

/** Metadata sections longer than this are not a GGUF header armature reads. */
const MAX_HEADER_BYTES = 512 * 1024 * 1024;

/**
 * The GGUF at `path` without its tensors: its header and every metadata key and value, byte for
 * byte, with a tensor count of 0. llama.cpp loads it with `vocabOnly` as it loads the model's own
 * vocabulary (tokens, merges, token types, pre-tokenizer, chat template, special tokens), so a
 * frontend can tokenize for a model whose weights (gigabytes) it does not have: a few megabytes.
 */
export async function vocabOnlyGguf(path: string): Promise<Buffer> {
  const file = await open(path, "r");
  try {
    let buffer = Buffer.alloc(0);
    const ensure = async (end: number): Promise<void> => {
      if (end <= buffer.length) return;
      if (end > MAX_HEADER_BYTES) throw new Error(`${path}: a GGUF metadata section over ${MAX_HEADER_BYTES} bytes`);
      const more = Buffer.alloc(Math.max(end - buffer.length, 4 * 1024 * 1024));
      const { bytesRead } = await file.read(more, 0, more.length, buffer.length);
      if (buffer.length + bytesRead < end) throw new Error(`${path}: the GGUF ends inside its metadata`);
      buffer = Buffer.concat([buffer, more.subarray(0, bytesRead)]);
    };
    await ensure(24);
    if (buffer.toString("latin1", 0, 4) !== "GGUF") throw new Error(`${path} is not a GGUF file`);
    const version = buffer.readUInt32LE(4);
    if (version < 2) throw new Error(`${path}: GGUF version ${version} is older than armature reads (2 or later)`);
    const kvCount = buffer.readBigUInt64LE(16);
    let at = 24;
    let alignment = 32;
    const readU64 = async (): Promise<number> => {
      await ensure(at + 8);
      const value = Number(buffer.readBigUInt64LE(at));
      at += 8;
      return value;
    };
    const skipValue = async (type: number): Promise<void> => {
      const fixed = FIXED_SIZE[type];
      if (fixed !== undefined) {
        at += fixed;
        return ensure(at);
      }
      if (type === STRING) {
        const length = await readU64(); // read before `at` moves on: `at += await …` would add to the old `at`
        at += length;
        return ensure(at);
      }
      if (type !== ARRAY) throw new Error(`${path}: a GGUF value of unknown type ${type}`);
      await ensure(at + 12);
      const itemType = buffer.readUInt32LE(at);
      const count = Number(buffer.readBigUInt64LE(at + 4));
      at += 12;
      const itemSize = FIXED_SIZE[itemType];
      if (itemSize !== undefined) {
        at += itemSize * count;
        return ensure(at);
      }
      for (let i = 0; i < count; i++) await skipValue(itemType);
    };
    for (let i = 0n; i < kvCount; i++) {
      const keyLength = await readU64();
      await ensure(at + keyLength + 4);
      const key = buffer.toString("utf8", at, at + keyLength);
      at += keyLength;
      const type = buffer.readUInt32LE(at);
      at += 4;
      if (key === "general.alignment" && type === 4) {
        await ensure(at + 4);
        alignment = buffer.readUInt32LE(at) || 32;
      }
      await skipValue(type);
    }
    const header = Buffer.from(buffer.subarray(0, at));
    header.writeBigUInt64LE(0n, 8); // no tensors
    const padding = (alignment - (header.length % alignment)) % alignment;
    return Buffer.concat([header, Buffer.alloc(padding)]);
  } finally {
    await file.close();
  }
}
