import { xxh3 } from "@node-rs/xxhash";

/** Dynamo's seed for every block hash. */
export const BLOCK_HASH_SEED = 1337n;
const U64_MASK = (1n << 64n) - 1n;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Seed for a LoRA adapter: 1337 + XXH3-64(name), wrapping at 2^64. */
export function loraSeed(loraName: string | undefined): bigint {
  if (loraName === undefined || loraName === "") return BLOCK_HASH_SEED;
  return (BLOCK_HASH_SEED + xxh3.xxh64(Buffer.from(loraName, "utf8"), 0n)) & U64_MASK;
}

/** XXH3-64 of a block's token ids as u32 little-endian bytes. */
export function localBlockHash(tokens: ArrayLike<number>, seed: bigint = BLOCK_HASH_SEED): bigint {
  return xxh3.xxh64(u32Bytes(tokens, 0, tokens.length), seed);
}

const chainScratch = Buffer.alloc(16);
// Little-endian words written through a typed array: `writeBigUInt64LE` splits each bigint by
// shifts and masks, a typed array stores it as it is (on a big-endian host, a DataView swaps).
const chainWords = new BigUint64Array(chainScratch.buffer, chainScratch.byteOffset, 2);
const chainView = new DataView(chainScratch.buffer, chainScratch.byteOffset, 16);

/** Chains a block onto its parent: XXH3-64(le64(parent) ‖ le64(local)), seed 1337. */
export function chainBlockHash(parent: bigint, local: bigint): bigint {
  // The hash reads the bytes synchronously, so one scratch buffer serves every call.
  if (LITTLE_ENDIAN) {
    chainWords[0] = parent;
    chainWords[1] = local;
  } else {
    chainView.setBigUint64(0, parent, true);
    chainView.setBigUint64(8, local, true);
  }
  return xxh3.xxh64(chainScratch, BLOCK_HASH_SEED);
}

export interface BlockHashes {
  readonly local: bigint[];
  readonly sequence: bigint[];
}

/** Hashes the full blocks of a token sequence; a trailing partial block is ignored. */
export function hashBlocks(tokens: ArrayLike<number>, blockSize: number, loraName?: string): BlockHashes {
  const local = localBlockHashes(tokens, blockSize, loraName);
  const sequence: bigint[] = new Array(local.length);
  for (let b = 0; b < local.length; b++) {
    const h = local[b] as bigint;
    sequence[b] = b === 0 ? h : chainBlockHash(sequence[b - 1] as bigint, h);
  }
  return { local, sequence };
}

/**
 * The local hashes alone of `hashBlocks` (what the router's index is queried with): the chained
 * sequence hashes cost as much again and a lookup does not read them.
 */
export function localBlockHashes(tokens: ArrayLike<number>, blockSize: number, loraName?: string): bigint[] {
  const seed = loraSeed(loraName);
  const full = Math.floor(tokens.length / blockSize);
  if (full === 0) return [];
  const bytes = u32Bytes(tokens, 0, full * blockSize);
  const local: bigint[] = new Array(full);
  for (let b = 0; b < full; b++) local[b] = xxh3.xxh64(bytes.subarray(b * blockSize * 4, (b + 1) * blockSize * 4), seed);
  return local;
}

/**
 * The words `u32Bytes` copies tokens into, grown as needed and kept: a typed array made per call
 * costs more than hashing a short prompt. Safe to share because every caller hashes the bytes
 * before it returns.
 */
let scratch = new Uint32Array(4096);

/** Tokens [start, end) as u32 little-endian bytes, valid until the next call. */
function u32Bytes(tokens: ArrayLike<number>, start: number, end: number): Buffer {
  if (LITTLE_ENDIAN && tokens instanceof Uint32Array) {
    return Buffer.from(tokens.buffer, tokens.byteOffset + start * 4, (end - start) * 4);
  }
  const count = end - start;
  if (scratch.length < count) scratch = new Uint32Array(Math.max(count, scratch.length * 2));
  const words = scratch;
  for (let i = start; i < end; i++) words[i - start] = tokens[i] as number;
  const bytes = Buffer.from(words.buffer, 0, count * 4);
  if (!LITTLE_ENDIAN) bytes.swap32();
  return bytes;
}
