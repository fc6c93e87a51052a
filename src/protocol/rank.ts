import { ArmatureError } from "./errors.js";
import { arrayOf, int, literal, MessageInvalidError, num, object, optional, type Schema, str } from "./schema.js";

/**
 * Ranking requests on the request plane (`POST /v1/rerank`, `POST /v1/score`): the frontend sends
 * one `rank-request` to a worker's ranking address (`subjects.rank`), and the worker streams back
 * one `rank-response` per document, in document order. Errors travel as the plane's errors.
 */

/** Documents one request may carry (as many as an embedding request's inputs). */
export const MAX_RANK_DOCUMENTS = 2048;
/** Token ids one request may carry over its queries and documents. */
export const MAX_RANK_TOKENS = 1 << 21;

/** Score each document against its query with the model's ranking head. */
export interface RankRequest {
  readonly type: "rank-request";
  readonly requestId: string;
  readonly model: string;
  /**
   * Token ids of the queries, each non-empty: one query that every document is scored against
   * (rerank), or one per document, pair by pair (score).
   */
  readonly queries: readonly (readonly number[])[];
  /** Token ids per document, each non-empty. */
  readonly documents: readonly (readonly number[])[];
  /** Time left for the request when it was sent, in ms; the worker stops when it runs out. */
  readonly timeoutMs?: number | undefined;
}

/** One document's score, streamed by the worker in document order. */
export interface RankResponse {
  readonly type: "rank-response";
  /** Position of the document in `RankRequest.documents`. */
  readonly index: number;
  /** The model's relevance of the document to its query, a probability in [0, 1]. */
  readonly score: number;
  /** Tokens the model read for this pair, with the tokens its ranking input adds (what usage counts). */
  readonly promptTokens: number;
}

const tokenId = int(0, 0x7fffffff);
const tokenLists = arrayOf(arrayOf(tokenId, MAX_RANK_TOKENS), MAX_RANK_DOCUMENTS);

const rankRequestShape = object({
  type: literal("rank-request"),
  requestId: str({ maxLength: 256 }),
  model: str({ maxLength: 256 }),
  queries: tokenLists,
  documents: tokenLists,
  timeoutMs: optional(num(0)),
});

/** The query of each document, in document order. */
export function queryOf(request: RankRequest, index: number): readonly number[] {
  return (request.queries.length === 1 ? request.queries[0] : request.queries[index]) as readonly number[];
}

/**
 * A `rank-request`: at least one document, one query or one per document, none empty, at most
 * `MAX_RANK_TOKENS` token ids in all.
 */
export const rankRequestSchema: Schema<RankRequest> = {
  parse(value, path = "") {
    const at = (field: string): string => (path ? `${path}.${field}` : field);
    // Bound the walk before checking each id: a hostile peer's nested arrays are counted first.
    let total = 0;
    for (const field of ["queries", "documents"] as const) {
      const lists = (value as Record<string, unknown> | null)?.[field];
      if (Array.isArray(lists))
        for (const list of lists.slice(0, MAX_RANK_DOCUMENTS)) if (Array.isArray(list)) total += list.length;
    }
    if (total > MAX_RANK_TOKENS)
      throw new MessageInvalidError(at("documents"), `holds more than ${MAX_RANK_TOKENS} token ids with the queries`);
    const request = rankRequestShape.parse(value, path);
    if (request.documents.length === 0) throw new MessageInvalidError(at("documents"), "must hold at least one document");
    if (request.queries.length !== 1 && request.queries.length !== request.documents.length) {
      throw new MessageInvalidError(
        at("queries"),
        `must hold one query or one per document (${request.documents.length}), got ${request.queries.length}`,
      );
    }
    for (const field of ["queries", "documents"] as const) {
      const empty = request[field].findIndex((list) => list.length === 0);
      if (empty >= 0) throw new MessageInvalidError(at(`${field}[${empty}]`), "must hold at least one token id");
    }
    return request;
  },
};

/** A `rank-response`. */
export const rankResponseSchema: Schema<RankResponse> = object({
  type: literal("rank-response"),
  index: int(0, MAX_RANK_DOCUMENTS - 1),
  score: num(0, 1),
  promptTokens: int(1, MAX_RANK_TOKENS),
});

/** The refusal of a ranking request by a model that cannot rank (the frontend and the worker both give it). */
export function cannotRank(model: string, engine: string): ArmatureError {
  const why =
    engine === "llamacpp"
      ? "its GGUF has no classifier head (cls.output.weight); serve a reranker GGUF"
      : `the ${engine} engine scores no pairs here; serve a reranker GGUF with --engine llamacpp`;
  return new ArmatureError(
    "NOT_SUPPORTED",
    `model ${model} cannot rank: ${why} for POST /v1/rerank and /v1/score (GET /v1/models lists what each model serves as its kinds)`,
    { param: "model" },
  );
}
