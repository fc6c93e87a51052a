import { arrayOf, int, literal, MessageInvalidError, num, object, optional, type Schema, str } from "./schema.js";

/**
 * Embedding requests on the request plane: the frontend sends one `embed-request` to a worker's
 * embedding address (`subjects.embed`), and the worker streams back one `embed-response` per input,
 * in input order. Errors travel as the plane's errors (an `ArmatureError` with its code and param).
 */

/** Inputs one request may carry: OpenAI's limit on `input` arrays. */
export const MAX_EMBED_INPUTS = 2048;
/** Token ids one request may carry over all its inputs: more than any batch a worker can embed. */
export const MAX_EMBED_TOKENS = 1 << 21;
/** Floats one embedding may hold: above any model's hidden size. */
export const MAX_EMBED_DIMENSIONS = 1 << 16;

/** Embed each input's token ids with the model's embedding. */
export interface EmbedRequest {
  readonly type: "embed-request";
  readonly requestId: string;
  readonly model: string;
  /** Token ids per input, each non-empty. */
  readonly inputs: readonly (readonly number[])[];
  /**
   * The embedding size the client asked for (OpenAI's `dimensions`). A worker serves only its
   * model's own size and refuses any other (`NOT_SUPPORTED`, param `dimensions`). Absent: the model's.
   */
  readonly dimensions?: number | undefined;
  /** Time left for the request when it was sent, in ms; the worker stops when it runs out. */
  readonly timeoutMs?: number | undefined;
}

/** One input's embedding, streamed by the worker in input order. */
export interface EmbedResponse {
  readonly type: "embed-response";
  /** Position of the input in `EmbedRequest.inputs`. */
  readonly index: number;
  /** The vector as little-endian float32 bytes, base64 (`encodeEmbedding`): compact and exact. */
  readonly embedding: string;
  /** Tokens the input held (what usage counts). */
  readonly promptTokens: number;
}

const tokenId = int(0, 0x7fffffff);

const embedRequestShape = object({
  type: literal("embed-request"),
  requestId: str({ maxLength: 256 }),
  model: str({ maxLength: 256 }),
  inputs: arrayOf(arrayOf(tokenId, MAX_EMBED_TOKENS), MAX_EMBED_INPUTS),
  dimensions: optional(int(1, MAX_EMBED_DIMENSIONS)),
  timeoutMs: optional(num(0)),
});

/** An `embed-request`: at least one input, none empty, at most `MAX_EMBED_TOKENS` token ids in all. */
export const embedRequestSchema: Schema<EmbedRequest> = {
  parse(value, path = "") {
    const at = (field: string): string => (path ? `${path}.${field}` : field);
    // Bound the walk before checking each id: a hostile peer's nested arrays are counted first.
    const inputs = (value as { inputs?: unknown } | null)?.inputs;
    if (Array.isArray(inputs)) {
      let total = 0;
      for (const input of inputs.slice(0, MAX_EMBED_INPUTS)) if (Array.isArray(input)) total += input.length;
      if (total > MAX_EMBED_TOKENS) throw new MessageInvalidError(at("inputs"), `holds more than ${MAX_EMBED_TOKENS} token ids`);
    }
    const request = embedRequestShape.parse(value, path);
    if (request.inputs.length === 0) throw new MessageInvalidError(at("inputs"), "must hold at least one input");
    const empty = request.inputs.findIndex((input) => input.length === 0);
    if (empty >= 0) throw new MessageInvalidError(at(`inputs[${empty}]`), "must hold at least one token id");
    return request;
  },
};

/** Base64 of `MAX_EMBED_DIMENSIONS` float32s. */
const MAX_EMBEDDING_CHARS = Math.ceil((MAX_EMBED_DIMENSIONS * 4) / 3) + 4;

const embedResponseShape = object({
  type: literal("embed-response"),
  index: int(0, MAX_EMBED_INPUTS - 1),
  embedding: str({ maxLength: MAX_EMBEDDING_CHARS, pattern: /^[A-Za-z0-9+/]*={0,2}$/ }),
  promptTokens: int(1, MAX_EMBED_TOKENS),
});

/** An `embed-response`: its embedding whole float32s (a multiple of 4 bytes, at least one float). */
export const embedResponseSchema: Schema<EmbedResponse> = {
  parse(value, path = "") {
    const response = embedResponseShape.parse(value, path);
    const bytes = base64Bytes(response.embedding);
    if (bytes <= 0 || bytes % 4 !== 0) {
      throw new MessageInvalidError(path ? `${path}.embedding` : "embedding", `must hold whole float32s, got ${bytes} bytes`);
    }
    return response;
  },
};

/** The vector as the wire and OpenAI's `encoding_format: "base64"` carry it: little-endian float32, base64. */
export function encodeEmbedding(vector: ArrayLike<number>): string {
  const bytes = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i] as number, i * 4);
  return bytes.toString("base64");
}

/** The numbers of an `encodeEmbedding` string (each a float32 value, as a JavaScript number). */
export function decodeEmbedding(text: string): number[] {
  const bytes = Buffer.from(text, "base64");
  const vector = new Array<number>(bytes.length >> 2);
  for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
  return vector;
}

/** Bytes a padded base64 text decodes to; -1 when its length is not a whole number of quads. */
function base64Bytes(text: string): number {
  if (text.length % 4 !== 0) return -1;
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return (text.length * 3) / 4 - padding;
}
