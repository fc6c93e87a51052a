import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import { toHttpError } from "../http-errors.js";
import { lingerThenClose, readBody, readJsonBody, sendJson } from "../http-io.js";
import { asObject, type Body, invalid } from "../requests/field-checks.js";
import {
  BATCH_ENDPOINTS,
  type BatchObject,
  COMPLETION_WINDOW,
  COMPLETION_WINDOW_SECONDS,
  type FileObject,
} from "./batch-objects.js";
import type { BatchRunner } from "./batch-runner.js";
import { type BatchStore, newBatchId, type StoredBatch, type StoredFile } from "./batch-store.js";

/** What the batch routes need: the store, the runner and the caller's key. */
export interface BatchRouteDeps {
  readonly store: BatchStore;
  readonly runner: BatchRunner;
  /** Largest uploaded file (`--batch-max-file-bytes`). */
  readonly maxFileBytes: number;
  /** Largest JSON body of the other routes. */
  readonly bodyLimitBytes: number;
  /** The API key's name: files and batches are its own. Null without keys. */
  readonly owner: string | null;
  /** Where a request that fails (500) says why. */
  readonly log: Logger;
}

const FILES = "/v1/files";
const BATCHES = "/v1/batches";
const BATCH_FIELDS = new Set(["input_file_id", "endpoint", "completion_window", "metadata", "output_expires_after"]);

/** Whether `path` is one of the Files or Batches API's. */
export function isBatchPath(path: string): boolean {
  return path === FILES || path.startsWith(`${FILES}/`) || path === BATCHES || path.startsWith(`${BATCHES}/`);
}

/**
 * OpenAI's Files API (for batch input and output) and Batch API: `POST /v1/files`, `GET /v1/files`,
 * `GET|DELETE /v1/files/{id}`, `GET /v1/files/{id}/content`, `POST /v1/batches`, `GET /v1/batches`,
 * `GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`. With API keys, a key sees only its own
 * files and batches; another's are 404 as if they did not exist.
 */
export async function handleBatchRoute(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  headers: Record<string, string>,
  deps: BatchRouteDeps,
): Promise<void> {
  try {
    const [, , collection, id, action, ...rest] = path.split("/");
    const method = req.method ?? "GET";
    if (rest.length > 0) throw notFound(`no route ${path}`);
    if (collection === "files") {
      if (id === undefined || id === "") {
        if (method === "POST") return sendJson(res, 200, wire(await uploadFile(req, deps)), headers);
        if (method === "GET") return sendJson(res, 200, await listFiles(req, deps), headers);
        return notAllowed(req, res, path, headers);
      }
      const stored = await ownFile(deps, id);
      if (action === "content") {
        if (method !== "GET") return notAllowed(req, res, path, headers);
        const content = await deps.store.fileContent(stored.file.id);
        res.writeHead(200, { ...headers, "content-type": "application/jsonl", "content-length": content.byteLength });
        res.end(content);
        return;
      }
      if (action !== undefined) throw notFound(`no route ${path}`);
      if (method === "GET") return sendJson(res, 200, wire(stored.file), headers);
      if (method === "DELETE") {
        await deps.store.deleteFile(stored.file.id);
        return sendJson(res, 200, { id: stored.file.id, object: "file", deleted: true }, headers);
      }
      return notAllowed(req, res, path, headers);
    }
    if (id === undefined || id === "") {
      if (method === "POST") return sendJson(res, 200, wire(await createBatch(req, deps)), headers);
      if (method === "GET") return sendJson(res, 200, await listBatches(req, deps), headers);
      return notAllowed(req, res, path, headers);
    }
    const stored = await ownBatch(deps, id);
    if (action === "cancel") {
      if (method !== "POST") return notAllowed(req, res, path, headers);
      req.resume();
      const cancelled = await deps.runner.cancel(stored.batch.id);
      return sendJson(res, 200, wire((cancelled ?? stored).batch), headers);
    }
    if (action !== undefined) throw notFound(`no route ${path}`);
    if (method !== "GET") return notAllowed(req, res, path, headers);
    return sendJson(res, 200, wire(stored.batch), headers);
  } catch (error) {
    const http = toHttpError(error);
    if (http.status >= 500) deps.log.error({ err: error, path }, "Files or Batch API request failed");
    if (!res.headersSent) {
      sendJson(res, http.status, http.body, headers);
      if (http.status === 413) lingerThenClose(req);
    }
  }
}

/** `POST /v1/files`: multipart/form-data with `purpose` (`batch`) and `file` (JSONL). */
async function uploadFile(req: IncomingMessage, deps: BatchRouteDeps): Promise<FileObject> {
  const type = req.headers["content-type"] ?? "";
  if (!type.toLowerCase().startsWith("multipart/form-data")) {
    req.resume();
    throw invalid("file", "upload the file as multipart/form-data with the fields purpose and file");
  }
  const body = await readBody(req, deps.maxFileBytes, "--batch-max-file-bytes");
  let form: FormData;
  try {
    form = await new Response(body, { headers: { "content-type": type } }).formData();
  } catch (cause) {
    throw new ArmatureError("REQUEST_INVALID", "the multipart/form-data body could not be read", { cause, param: "file" });
  }
  for (const name of form.keys()) {
    if (name !== "purpose" && name !== "file" && name !== "expires_after[anchor]" && name !== "expires_after[seconds]")
      throw invalid(name, `Unrecognized request argument supplied: ${name}`);
  }
  if (form.has("expires_after[anchor]") || form.has("expires_after[seconds]"))
    throw new ArmatureError("NOT_SUPPORTED", "files do not expire here; leave expires_after out", { param: "expires_after" });
  const purpose = form.get("purpose");
  if (purpose !== "batch")
    throw invalid(
      "purpose",
      `purpose must be 'batch' (the only one this server stores files for), got ${JSON.stringify(purpose)}`,
    );
  const file = form.get("file");
  if (file === null || typeof file === "string") throw invalid("file", "the form has no file part named 'file'");
  const content = new Uint8Array(await file.arrayBuffer());
  if (content.byteLength === 0) throw invalid("file", "the file is empty");
  return deps.store.addFile(content, file.name || "upload.jsonl", "batch", deps.owner);
}

async function listFiles(req: IncomingMessage, deps: BatchRouteDeps): Promise<unknown> {
  req.resume();
  const query = new URL(req.url ?? "/", "http://x").searchParams;
  const purpose = query.get("purpose");
  const files = (await deps.store.listFiles())
    .filter((f) => f.owner === deps.owner && (purpose === null || f.file.purpose === purpose))
    .map((f) => wire(f.file));
  // The schema requires first_id and last_id as strings, which an empty list cannot give: null then.
  return { object: "list", data: files, has_more: false, first_id: files[0]?.id ?? null, last_id: files.at(-1)?.id ?? null };
}

/** `POST /v1/batches`: `{input_file_id, endpoint, completion_window: "24h", metadata?}`. */
async function createBatch(req: IncomingMessage, deps: BatchRouteDeps): Promise<BatchObject> {
  const body = asObject(await readJsonBody(req, deps.bodyLimitBytes), "body");
  const unknown = Object.keys(body).find((key) => !BATCH_FIELDS.has(key));
  if (unknown !== undefined) throw invalid(unknown, `Unrecognized request argument supplied: ${unknown}`);
  if (body.output_expires_after !== undefined && body.output_expires_after !== null)
    throw new ArmatureError("NOT_SUPPORTED", "output files do not expire here; leave output_expires_after out", {
      param: "output_expires_after",
    });
  const inputFileId = body.input_file_id;
  if (typeof inputFileId !== "string" || inputFileId === "") throw invalid("input_file_id", "input_file_id is required");
  const input = await deps.store.file(inputFileId);
  if (!input || input.owner !== deps.owner) throw notFound(`No such File object: ${inputFileId}`, "input_file_id");
  if (input.file.purpose !== "batch") throw invalid("input_file_id", `file ${inputFileId} was not uploaded with purpose 'batch'`);
  const endpoint = body.endpoint;
  if (typeof endpoint !== "string" || !(BATCH_ENDPOINTS as readonly string[]).includes(endpoint))
    throw invalid("endpoint", `endpoint must be one of ${BATCH_ENDPOINTS.join(", ")}`);
  if (body.completion_window !== COMPLETION_WINDOW)
    throw invalid("completion_window", `completion_window must be '${COMPLETION_WINDOW}'`);
  const metadata = parseMetadata(body);
  const now = Math.floor(Date.now() / 1000);
  const batch: BatchObject = {
    id: newBatchId(),
    object: "batch",
    endpoint,
    errors: null,
    input_file_id: inputFileId,
    completion_window: COMPLETION_WINDOW,
    status: "validating",
    output_file_id: null,
    error_file_id: null,
    created_at: now,
    in_progress_at: null,
    expires_at: now + COMPLETION_WINDOW_SECONDS,
    finalizing_at: null,
    completed_at: null,
    failed_at: null,
    expired_at: null,
    cancelling_at: null,
    cancelled_at: null,
    request_counts: { total: 0, completed: 0, failed: 0 },
    metadata,
  };
  await deps.store.saveBatch({ batch, owner: deps.owner });
  deps.runner.run(batch.id);
  return batch;
}

/** OpenAI's metadata: at most 16 string pairs, keys up to 64 characters, values up to 512. */
function parseMetadata(body: Body): Record<string, string> | null {
  const value = body.metadata;
  if (value === undefined || value === null) return null;
  const metadata = asObject(value, "metadata");
  const entries = Object.entries(metadata);
  if (entries.length > 16) throw invalid("metadata", "metadata holds at most 16 pairs");
  for (const [key, v] of entries) {
    if (key.length > 64) throw invalid("metadata", `metadata key '${key.slice(0, 16)}…' is longer than 64 characters`);
    if (typeof v !== "string" || v.length > 512)
      throw invalid("metadata", `metadata.${key} must be a string of at most 512 characters`);
  }
  return metadata as Record<string, string>;
}

async function listBatches(req: IncomingMessage, deps: BatchRouteDeps): Promise<unknown> {
  req.resume();
  const query = new URL(req.url ?? "/", "http://x").searchParams;
  const limitText = query.get("limit");
  const limit = limitText === null ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalid("limit", "limit must be an integer from 1 to 100");
  const after = query.get("after");
  let batches = (await deps.store.listBatches()).filter((b) => b.owner === deps.owner).map((b) => b.batch);
  if (after !== null) {
    const at = batches.findIndex((b) => b.id === after);
    if (at < 0) throw invalid("after", `after names no batch: ${after}`);
    batches = batches.slice(at + 1);
  }
  const page = batches.slice(0, limit).map(wire);
  return wire({
    object: "list",
    data: page,
    first_id: page[0]?.id ?? null,
    last_id: page.at(-1)?.id ?? null,
    has_more: batches.length > page.length,
  });
}

async function ownFile(deps: BatchRouteDeps, id: string): Promise<StoredFile> {
  const stored = await deps.store.file(id);
  if (!stored || stored.owner !== deps.owner) throw notFound(`No such File object: ${id}`);
  return stored;
}

async function ownBatch(deps: BatchRouteDeps, id: string): Promise<StoredBatch> {
  const stored = await deps.store.batch(id);
  if (!stored || stored.owner !== deps.owner) throw notFound(`No such Batch object: ${id}`);
  return stored;
}

/**
 * An object as the API sends it: fields not set yet (null here) are left out, as OpenAI's schemas
 * declare them (optional, not nullable).
 */
function wire<T extends object>(object: T): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== null)) as Partial<T>;
}

function notFound(message: string, param?: string): ArmatureError {
  return new ArmatureError("RESOURCE_NOT_FOUND", message, { param });
}

function notAllowed(req: IncomingMessage, res: ServerResponse, path: string, headers: Record<string, string>): void {
  req.resume();
  sendJson(
    res,
    405,
    toHttpError(new ArmatureError("REQUEST_INVALID", `method ${req.method} is not allowed on ${path}`)).body,
    headers,
  );
}
