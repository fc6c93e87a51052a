import { int, literal, object, type Schema, str } from "./schema.js";

/** Asks a worker for its tokenizer bundle (request plane, `subjects.tokenizer`). */
export interface TokenizerRequest {
  readonly type: "tokenizer-request";
  /** The bundle the card names; a worker whose bundle differs refuses. */
  readonly sha256: string;
}

/** One piece of one file of the bundle, in order; a file's pieces add up to its `size`. */
export interface TokenizerFilePart {
  readonly type: "tokenizer-file";
  readonly name: string;
  /** The whole file's bytes. */
  readonly size: number;
  readonly offset: number;
  /** This piece, base64. */
  readonly data: string;
}

/** Bytes of a file per piece: base64 of it stays well under NATS's default 1 MiB message. */
export const TOKENIZER_PART_BYTES = 512 * 1024;

/** A bundle file larger than this is refused (a vocabulary-only GGUF of a large vocabulary is tens of MB). */
export const MAX_TOKENIZER_FILE_BYTES = 256 * 1024 * 1024;

const sha256 = str({ maxLength: 64, pattern: /^[0-9a-f]{64}$/ });

export const tokenizerRequestSchema: Schema<TokenizerRequest> = object({
  type: literal("tokenizer-request"),
  sha256,
});

export const tokenizerFilePartSchema: Schema<TokenizerFilePart> = object({
  type: literal("tokenizer-file"),
  name: str({ maxLength: 64, pattern: /^[A-Za-z0-9_.-]+$/ }),
  size: int(0, MAX_TOKENIZER_FILE_BYTES),
  offset: int(0, MAX_TOKENIZER_FILE_BYTES),
  data: str({ maxLength: Math.ceil(TOKENIZER_PART_BYTES / 3) * 4 }),
});
