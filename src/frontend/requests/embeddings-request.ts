import { MAX_EMBED_INPUTS } from "../../protocol/index.js";
import { asObject, invalid, optionalNumber, requiredString } from "./field-checks.js";
import { embeddingsFields, refuseUnservedFields } from "./request-fields.js";

/** What to embed: texts (tokenized by the frontend) or token ids as the client sent them. */
export type EmbeddingsInput =
  | { readonly kind: "texts"; readonly texts: readonly string[] }
  | { readonly kind: "tokens"; readonly tokens: readonly (readonly number[])[] };

/** A validated `POST /v1/embeddings` body (OpenAI's CreateEmbeddingRequest). */
export interface EmbeddingsRequest {
  readonly model: string;
  /** One entry per embedding to return, in order. */
  readonly input: EmbeddingsInput;
  /** Default `float`. */
  readonly encodingFormat: "float" | "base64";
  /** The size asked for; the worker serves only the model's own (docs/api.md). */
  readonly dimensions: number | undefined;
}

/**
 * Validates a `POST /v1/embeddings` body. `input` is a non-empty string, or a non-empty array (at most
 * 2048 items) of non-empty strings, of token ids, or of non-empty token-id arrays; anything else, an
 * empty string included, is a 400 naming `input`. Token ids are checked against the vocabulary and
 * lengths against the context once the model is known (the route does it).
 */
export function parseEmbeddingsRequest(raw: unknown): EmbeddingsRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, embeddingsFields);
  const model = requiredString(body, "model");
  const format = body.encoding_format ?? "float";
  if (format !== "float" && format !== "base64") {
    throw invalid("encoding_format", `'encoding_format' must be "float" or "base64", got ${JSON.stringify(format)}`);
  }
  if (body.user !== undefined && body.user !== null && typeof body.user !== "string") {
    throw invalid("user", "'user' must be a string");
  }
  const dimensions = optionalNumber(body, "dimensions", { min: 1, integer: true });
  return { model, input: parseInput(body.input), encodingFormat: format, dimensions };
}

function parseInput(input: unknown): EmbeddingsInput {
  if (typeof input === "string") {
    if (input === "") throw invalid("input", "'input' must not be an empty string");
    return { kind: "texts", texts: [input] };
  }
  if (!Array.isArray(input)) {
    throw invalid(
      "input",
      "'input' is required: a string, an array of strings, an array of token ids, or an array of token-id arrays",
    );
  }
  if (input.length === 0) throw invalid("input", "'input' must not be an empty array");
  if (input.length > MAX_EMBED_INPUTS)
    throw invalid("input", `'input' may hold at most ${MAX_EMBED_INPUTS} items, got ${input.length}`);
  if (input.every((item) => typeof item === "string")) {
    const empty = input.indexOf("");
    if (empty >= 0) throw invalid("input", `'input[${empty}]' must not be an empty string`);
    return { kind: "texts", texts: input as string[] };
  }
  if (input.every((item) => typeof item === "number")) return { kind: "tokens", tokens: [tokenIds(input, "input")] };
  if (input.every((item) => Array.isArray(item))) {
    return { kind: "tokens", tokens: input.map((item: unknown[], i) => tokenIds(item, `input[${i}]`)) };
  }
  throw invalid("input", "'input' must be an array of strings, of token ids, or of token-id arrays, not a mix");
}

function tokenIds(items: readonly unknown[], where: string): number[] {
  if (items.length === 0) throw invalid("input", `'${where}' must not be an empty array`);
  const bad = items.findIndex((t) => !Number.isSafeInteger(t) || (t as number) < 0);
  if (bad >= 0) throw invalid("input", `'${where}[${bad}]' must be a non-negative integer token id`);
  return items as number[];
}
