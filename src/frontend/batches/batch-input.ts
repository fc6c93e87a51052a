import type { BatchLineError } from "./batch-objects.js";

/** One request of a batch's input file. */
export interface BatchEntry {
  /** 1-based line of the input file. */
  readonly line: number;
  readonly customId: string;
  readonly body: Record<string, unknown>;
}

/** A line that cannot run, with what its result line says. */
export interface RejectedLine extends BatchLineError {
  readonly line: number;
  /** The line's `custom_id` when it had a usable one. */
  readonly customId: string | null;
}

/** OpenAI's limit on the requests of one batch. */
export const MAX_BATCH_REQUESTS = 50_000;
const LINE_FIELDS = new Set(["custom_id", "method", "url", "body"]);

/**
 * Reads a batch input file: JSONL, one `{custom_id, method: "POST", url, body}` per line, `url` the
 * batch's endpoint, `custom_id` unique. Blank lines are skipped. Each line that breaks a rule is
 * rejected naming its line and what is wrong, and the others still run: one bad line loses no
 * other work.
 */
export function readBatchInput(text: string, endpoint: string): { entries: BatchEntry[]; rejected: RejectedLine[] } {
  const entries: BatchEntry[] = [];
  const rejected: RejectedLine[] = [];
  const seen = new Set<string>();
  text.split("\n").forEach((raw, index) => {
    if (raw.trim() === "") return;
    const read = readLine(raw, index + 1, endpoint, seen);
    if ("body" in read) entries.push(read);
    else rejected.push(read);
  });
  return { entries, rejected };
}

/** One non-blank line: its entry, or why it cannot run. */
function readLine(raw: string, line: number, endpoint: string, seen: Set<string>): BatchEntry | RejectedLine {
  const reject = (message: string, param: string | null, customId: string | null = null): RejectedLine => ({
    code: "invalid_request",
    message: `line ${line}: ${message}`,
    param,
    line,
    customId,
  });
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return reject("not a JSON object", null);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return reject("not a JSON object", null);
  const row = value as Record<string, unknown>;
  const customId = typeof row.custom_id === "string" && row.custom_id !== "" ? row.custom_id : null;
  if (customId === null) return reject("custom_id must be a non-empty string", "custom_id");
  const unknown = Object.keys(row).find((key) => !LINE_FIELDS.has(key));
  if (unknown !== undefined)
    return reject(`unknown field '${unknown}'; a line has custom_id, method, url and body`, unknown, customId);
  if (row.method !== "POST") return reject("method must be POST", "method", customId);
  if (row.url !== endpoint) return reject(`url must be the batch's endpoint, ${endpoint}`, "url", customId);
  const body = row.body;
  if (body === null || typeof body !== "object" || Array.isArray(body))
    return reject("body must be a JSON object", "body", customId);
  const fields = body as Record<string, unknown>;
  if (fields.stream !== undefined && fields.stream !== false)
    return reject("a batch request cannot stream; leave body.stream out", "body.stream", customId);
  if (fields.priority !== undefined)
    return reject("batch requests run at the lowest priority; leave body.priority out", "body.priority", customId);
  if (seen.has(customId)) return reject(`custom_id '${customId}' is used by an earlier line`, "custom_id", customId);
  seen.add(customId);
  return { line, customId, body: fields };
}
