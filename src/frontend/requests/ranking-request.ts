import { MAX_RANK_DOCUMENTS } from "../../protocol/index.js";
import { asObject, type Body, invalid, optionalBoolean, optionalNumber, requiredString } from "./field-checks.js";
import { refuseUnservedFields, rerankFields, scoreFields } from "./request-fields.js";

/** A validated `POST /v1/rerank` body. */
export interface RerankRequest {
  readonly model: string;
  readonly query: string;
  readonly documents: readonly string[];
  /** How many of the best documents to return; 0 (the default): all of them. */
  readonly topN: number;
  /** Whether each result carries its document's text (default true, as vLLM always does). */
  readonly returnDocuments: boolean;
}

/** A validated `POST /v1/score` body: the pairs to score, in order. */
export interface ScoreRequest {
  readonly model: string;
  /** One query for every document, or one per document. */
  readonly queries: readonly string[];
  readonly documents: readonly string[];
}

/**
 * Validates a `POST /v1/rerank` body (vLLM's and Jina's shape; Cohere's v2 reads the same):
 * `query` a non-empty string, `documents` 1–2048 non-empty strings or `{text}` objects, `top_n` an
 * integer of 0 or more. Each fault is a 400 naming its field.
 */
export function parseRerankRequest(raw: unknown): RerankRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, rerankFields);
  refuseNonStringUser(body);
  const model = requiredString(body, "model");
  const query = requiredString(body, "query");
  const documents = body.documents;
  if (!Array.isArray(documents)) {
    throw invalid("documents", "'documents' is required: an array of strings or of {\"text\": string} objects");
  }
  return {
    model,
    query,
    documents: texts(documents, "documents"),
    topN: optionalNumber(body, "top_n", { min: 0, integer: true }) ?? 0,
    returnDocuments: optionalBoolean(body, "return_documents") ?? true,
  };
}

/**
 * Validates a `POST /v1/score` body (vLLM's): `text_1` and `text_2` each a non-empty string or a
 * non-empty array of them; one `text_1` is scored against every `text_2`, otherwise the two arrays
 * pair up and must be as long. Each fault is a 400 naming its field.
 */
export function parseScoreRequest(raw: unknown): ScoreRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, scoreFields);
  refuseNonStringUser(body);
  const model = requiredString(body, "model");
  const queries = oneOrMany(body.text_1, "text_1");
  const documents = oneOrMany(body.text_2, "text_2");
  if (queries.length !== 1 && queries.length !== documents.length) {
    throw invalid(
      "text_2",
      `'text_1' and 'text_2' pair up: give one 'text_1' to score against every 'text_2', or as many of each (got ${queries.length} and ${documents.length})`,
    );
  }
  return { model, queries, documents };
}

function oneOrMany(value: unknown, field: string): string[] {
  if (typeof value === "string") {
    if (value === "") throw invalid(field, `'${field}' must not be an empty string`);
    return [value];
  }
  if (!Array.isArray(value)) throw invalid(field, `'${field}' is required: a string or an array of strings`);
  return texts(value, field);
}

/** Non-empty strings (or Jina's and Cohere's `{text}` objects), 1 to `MAX_RANK_DOCUMENTS` of them. */
function texts(items: readonly unknown[], field: string): string[] {
  if (items.length === 0) throw invalid(field, `'${field}' must not be an empty array`);
  if (items.length > MAX_RANK_DOCUMENTS)
    throw invalid(field, `'${field}' may hold at most ${MAX_RANK_DOCUMENTS} items, got ${items.length}`);
  return items.map((item, i) => {
    const text = typeof item === "object" && item !== null && !Array.isArray(item) ? (item as Body).text : item;
    if (typeof text !== "string" || text === "") {
      throw invalid(field, `'${field}[${i}]' must be a non-empty string or an object with a non-empty string 'text'`);
    }
    return text;
  });
}

function refuseNonStringUser(body: Body): void {
  if (body.user !== undefined && body.user !== null && typeof body.user !== "string")
    throw invalid("user", "'user' must be a string");
}
