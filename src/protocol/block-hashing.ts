import { xxh3 } from "@node-rs/xxhash";

/** Dynamo's seed for every block hash. */
export const BLOCK_HASH_SEED = 1337n;
const U64_MASK = (1n << 64n) - 1n;

/** Seed for a LoRA adapter: 1337 + XXH3-64(name), wrapping at 2^64. */
export function loraSeed(loraName: string | undefined): bigint {
  if (loraName === undefined || loraName === "") return BLOCK_HASH_SEED;
  return (BLOCK_HASH_SEED + xxh3.xxh64(Buffer.from(loraName, "utf8"), 0n)) & U64_MASK;
}

/** XXH3-64 of a block's token ids as u32 little-endian bytes. */
export function localBlockHash(tokens: ArrayLike<number>, seed: bigint = BLOCK_HASH_SEED): bigint {
  const bytes = Buffer.allocUnsafe(tokens.length * 4);
  for (let i = 0; i < tokens.length; i++) bytes.writeUInt32LE(tokens[i] ?? 0, i * 4);
  return xxh3.xxh64(bytes, seed);
}

/** Chains a block onto its parent: XXH3-64(le64(parent) ‖ le64(local)), seed 1337. */
export function chainBlockHash(parent: bigint, local: bigint): bigint {
  const bytes = Buffer.allocUnsafe(16);
  bytes.writeBigUInt64LE(parent, 0);
  bytes.writeBigUInt64LE(local, 8);
  return xxh3.xxh64(bytes, BLOCK_HASH_SEED);
}

export interface BlockHashes {
  readonly local: bigint[];
  readonly sequence: bigint[];
}

/** Hashes the full blocks of a token sequence; a trailing partial block is ignored. */
export function hashBlocks(tokens: ArrayLike<number>, blockSize: number, loraName?: string): BlockHashes {
  const seed = loraSeed(loraName);
  const local: bigint[] = [];
  const sequence: bigint[] = [];
  const full = Math.floor(tokens.length / blockSize);
  for (let b = 0; b < full; b++) {
    const block = Array.prototype.slice.call(tokens, b * blockSize, (b + 1) * blockSize) as number[];
    const h = localBlockHash(block, seed);
    local.push(h);
    const prev = sequence[b - 1];
    sequence.push(prev === undefined ? h : chainBlockHash(prev, h));
  }
  return { local, sequence };
}
