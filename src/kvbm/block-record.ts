import { xxh3 } from "@node-rs/xxhash";
import { ArmatureError } from "../protocol/index.js";

/** "AKVB" little-endian: the first four bytes of every stored block. */
const MAGIC = 0x42564b41;
const VERSION = 1;
/** Bytes before the payload. */
export const BLOCK_RECORD_HEADER_BYTES = 64;

/**
 * One KV block as the disk and object tiers keep it: the block's identity (sequence hash, parent
 * hash, tokens hash), the layout it was cut from, and its payload with a checksum. Blocks are
 * immutable, so a record is written once and read whole.
 */
export interface BlockRecord {
  /** Dynamo's sequence hash of the block (chained over every block before it). */
  readonly hash: bigint;
  /** Sequence hash of the block before it; null for the first block of a sequence. */
  readonly parent: bigint | null;
  /** XXH3-64 of the block's own token ids (the router's key). */
  readonly tokensHash: bigint;
  /** Fingerprint of the model's KV layout; blocks of another layout never mix. */
  readonly layout: bigint;
  readonly payload: Buffer;
}

/**
 * Header (64 bytes, little-endian): magic u32, version u32, layout u64, hash u64, parent u64,
 * has-parent u32, payload bytes u32, tokens hash u64, payload XXH3-64 u64, 8 bytes zero.
 */
export function encodeBlockRecord(record: BlockRecord): Buffer {
  const out = Buffer.allocUnsafe(BLOCK_RECORD_HEADER_BYTES + record.payload.length);
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt32LE(VERSION, 4);
  out.writeBigUInt64LE(record.layout, 8);
  out.writeBigUInt64LE(record.hash, 16);
  out.writeBigUInt64LE(record.parent ?? 0n, 24);
  out.writeUInt32LE(record.parent === null ? 0 : 1, 32);
  out.writeUInt32LE(record.payload.length, 36);
  out.writeBigUInt64LE(record.tokensHash, 40);
  out.writeBigUInt64LE(xxh3.xxh64(record.payload), 48);
  out.fill(0, 56, 64);
  record.payload.copy(out, BLOCK_RECORD_HEADER_BYTES);
  return out;
}

/** What a record's header says, read without checking the payload (a restart's scan). */
export interface BlockRecordHeader {
  readonly hash: bigint;
  readonly parent: bigint | null;
  readonly tokensHash: bigint;
  readonly layout: bigint;
  readonly payloadBytes: number;
}

/** Reads a record's header; throws TRANSFER_CORRUPTED when it is not one. */
export function readBlockRecordHeader(bytes: Buffer, source: string): BlockRecordHeader {
  if (bytes.length < BLOCK_RECORD_HEADER_BYTES || bytes.readUInt32LE(0) !== MAGIC) {
    throw corrupted(source, "it is not an armature KV block record");
  }
  if (bytes.readUInt32LE(4) !== VERSION) throw corrupted(source, `record version ${bytes.readUInt32LE(4)} is not ${VERSION}`);
  return {
    layout: bytes.readBigUInt64LE(8),
    hash: bytes.readBigUInt64LE(16),
    parent: bytes.readUInt32LE(32) === 0 ? null : bytes.readBigUInt64LE(24),
    payloadBytes: bytes.readUInt32LE(36),
    tokensHash: bytes.readBigUInt64LE(40),
  };
}

/**
 * Decodes a whole record and checks it: the header, that it is the block `expected` asks for (its
 * hash and layout), the length, and the payload's checksum. Any mismatch is TRANSFER_CORRUPTED.
 */
export function decodeBlockRecord(bytes: Buffer, expected: { hash: bigint; layout: bigint }, source: string): BlockRecord {
  const header = readBlockRecordHeader(bytes, source);
  if (header.hash !== expected.hash) throw corrupted(source, `it holds block ${hex(header.hash)}, not ${hex(expected.hash)}`);
  if (header.layout !== expected.layout) throw corrupted(source, "it was cut from a model with another KV layout");
  if (bytes.length !== BLOCK_RECORD_HEADER_BYTES + header.payloadBytes) {
    throw corrupted(source, `it has ${bytes.length} bytes; its header says ${BLOCK_RECORD_HEADER_BYTES + header.payloadBytes}`);
  }
  const payload = bytes.subarray(BLOCK_RECORD_HEADER_BYTES);
  if (xxh3.xxh64(payload) !== bytes.readBigUInt64LE(48)) throw corrupted(source, "its payload fails its checksum");
  return { hash: header.hash, parent: header.parent, tokensHash: header.tokensHash, layout: header.layout, payload };
}

/** A block hash as 16 hex digits (file and object names). */
export function hex(hash: bigint): string {
  return hash.toString(16).padStart(16, "0");
}

function corrupted(source: string, why: string): ArmatureError {
  return new ArmatureError("TRANSFER_CORRUPTED", `KV block ${source} is unusable: ${why}`, { retryable: true });
}
