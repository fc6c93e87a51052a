import { ArmatureError } from "../protocol/errors.js";
import { cutBlocks, cutCells, type SequenceStateLayout, stateTokens } from "./sequence-state.js";

/**
 * The part of a prompt's llama.cpp sequence state from token `fromToken` on, as a prefill worker
 * sends it to a decode worker that holds the first `fromToken` tokens already (on its device or in
 * its KV tiers). The decode worker puts its own first blocks before these and assembles the whole
 * state (`assembleState`). All little-endian:
 *
 * ```text
 * magic u32 ("AKVS") | version u32 (1) | block_size u32 | from_token u32 | n_tokens u32 | cell_bytes u32 |
 * shape_key_length u32 | shape_key utf-8 | tokens u32[n_tokens] (the prompt's, from from_token on) |
 * payloads: ⌊n_tokens / B⌋ blocks of B cells, then the partial last block (n_tokens mod B cells, if any),
 *           each in `cutBlocks`' block layout
 * ```
 *
 * `from_token` is a multiple of B, so the blocks are the prompt's blocks from_token/B on. See
 * docs/decisions/0011-disaggregation-moves-only-missing-blocks.md.
 */
const MAGIC = 0x53564b41;
const VERSION = 1;
const HEADER_BYTES = 28;
const MAX_SHAPE_KEY_BYTES = 1 << 16;
const MAX_BLOCK_SIZE = 1 << 16;

/** A parsed state suffix; its blocks are views into the bytes it was read from. */
export interface StateSuffix {
  readonly blockSize: number;
  /** Prompt tokens before the suffix: the receiver must hold them. */
  readonly fromToken: number;
  /** The prompt's token ids from `fromToken` on. */
  readonly tokens: readonly number[];
  readonly cellBytes: number;
  /** `StateShape.shapeKey` of the state the suffix was cut from. */
  readonly shapeKey: string;
  /** Block payloads of B cells, the last one possibly partial. */
  readonly blocks: readonly Buffer[];
}

/**
 * Cuts the cells `fromToken`.. of a parsed state into a state suffix. `fromToken` must be a multiple
 * of `blockSize` and below the state's cell count, else `NOT_SUPPORTED`.
 */
export function cutStateSuffix(bytes: Buffer, layout: SequenceStateLayout, blockSize: number, fromToken: number): Buffer {
  const n = layout.cellCount;
  if (!Number.isInteger(blockSize) || blockSize < 1 || blockSize > MAX_BLOCK_SIZE) {
    unsupported(`block size ${blockSize} is not in 1..${MAX_BLOCK_SIZE}`);
  }
  if (!Number.isInteger(fromToken) || fromToken < 0 || fromToken % blockSize !== 0 || fromToken >= n) {
    unsupported(`a suffix from token ${fromToken} of a ${n}-token state in blocks of ${blockSize}`);
  }
  const complete = Math.floor(n / blockSize);
  const blocks = cutBlocks(bytes, layout, blockSize, fromToken / blockSize, complete);
  if (complete * blockSize < n) blocks.push(cutCells(bytes, layout, complete * blockSize, n));
  const tokens = stateTokens(bytes, layout).slice(fromToken);
  const shapeKey = Buffer.from(layout.shape.shapeKey, "utf8");
  const header = Buffer.allocUnsafe(HEADER_BYTES + shapeKey.length + 4 * tokens.length);
  let at = header.writeUInt32LE(MAGIC, 0);
  for (const field of [VERSION, blockSize, fromToken, tokens.length, layout.shape.cellBytes, shapeKey.length]) {
    at = header.writeUInt32LE(field, at);
  }
  at += shapeKey.copy(header, at);
  for (const token of tokens) at = header.writeUInt32LE(token, at);
  return Buffer.concat([header, ...blocks]);
}

/**
 * Reads a state suffix. `TRANSFER_CORRUPTED` for a wrong magic, truncation, trailing bytes or a field
 * out of range; `NOT_SUPPORTED` for another version. Each message says what was found where.
 */
export function parseStateSuffix(bytes: Buffer): StateSuffix {
  if (bytes.length < HEADER_BYTES) corrupted(`${bytes.length} bytes, the header alone has ${HEADER_BYTES}`);
  const magic = bytes.readUInt32LE(0);
  if (magic !== MAGIC) corrupted(`magic is 0x${magic.toString(16)}, not 0x${MAGIC.toString(16)} ("AKVS")`);
  const version = bytes.readUInt32LE(4);
  if (version !== VERSION) {
    throw new ArmatureError("NOT_SUPPORTED", `KV state suffix version ${version}; this reader knows ${VERSION}`);
  }
  const [blockSize, fromToken, count, cellBytes, keyBytes] = [8, 12, 16, 20, 24].map((at) => bytes.readUInt32LE(at)) as [
    number,
    number,
    number,
    number,
    number,
  ];
  if (blockSize < 1 || blockSize > MAX_BLOCK_SIZE || fromToken % blockSize !== 0) {
    corrupted(`blocks of ${blockSize} tokens from token ${fromToken}`);
  }
  if (count < 1 || cellBytes < 1 || keyBytes < 1 || keyBytes > MAX_SHAPE_KEY_BYTES) {
    corrupted(`${count} tokens of ${cellBytes} bytes, a ${keyBytes}-byte shape key`);
  }
  const tokensAt = HEADER_BYTES + keyBytes;
  const payloadAt = tokensAt + 4 * count;
  const expected = payloadAt + count * cellBytes;
  if (bytes.length !== expected) corrupted(`${bytes.length} bytes; its header says ${expected}`);
  const shapeKey = bytes.toString("utf8", HEADER_BYTES, tokensAt);
  const tokens = Array.from({ length: count }, (_, i) => bytes.readUInt32LE(tokensAt + 4 * i));
  const blocks: Buffer[] = [];
  for (let cell = 0; cell < count; cell += blockSize) {
    const cells = Math.min(blockSize, count - cell);
    const start = payloadAt + cell * cellBytes;
    blocks.push(bytes.subarray(start, start + cells * cellBytes));
  }
  return { blockSize, fromToken, tokens, cellBytes, shapeKey, blocks };
}

function corrupted(what: string): never {
  throw new ArmatureError("TRANSFER_CORRUPTED", `not a KV state suffix this reader understands: ${what}`);
}

function unsupported(what: string): never {
  throw new ArmatureError("NOT_SUPPORTED", `cannot cut a KV state suffix: ${what}`);
}
