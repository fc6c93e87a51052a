import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

const SPEC = fileURLToPath(new URL("../fixtures/openai/openai-inference-subset.openapi.json", import.meta.url));
const BATCH_SPEC = fileURLToPath(new URL("../fixtures/openai/openai-batch-subset.openapi.json", import.meta.url));

/** OpenAPI 3.0's `nullable: true` (still in the OpenAI 3.1 spec) → `anyOf [schema, null]`. */
export function fixNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(fixNullable);
  if (node === null || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = fixNullable(v);
  if (out.nullable === true) {
    const { nullable: _, ...rest } = out;
    return { anyOf: [rest, { type: "null" }] };
  }
  delete out.nullable;
  return out;
}

const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
const addFormats = addFormatsModule as unknown as (a: Ajv2020) => void;
addFormats(ajv);
ajv.addFormat("unixtime", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 });
ajv.addSchema(fixNullable(JSON.parse(readFileSync(SPEC, "utf8"))) as object, "openai");
ajv.addSchema(fixNullable(JSON.parse(readFileSync(BATCH_SPEC, "utf8"))) as object, "openai-batch");

/** The Files and Batch APIs' objects, from their own subset of the spec. */
const BATCH_SCHEMAS = new Set(["Batch", "OpenAIFile", "ListBatchesResponse", "ListFilesResponse", "DeleteFileResponse"]);

export type SchemaName =
  | "CreateChatCompletionResponse"
  | "CreateChatCompletionStreamResponse"
  | "CreateCompletionResponse"
  | "CreateEmbeddingResponse"
  | "ListModelsResponse"
  | "Model"
  | "ErrorResponse"
  | "Batch"
  | "OpenAIFile"
  | "ListBatchesResponse"
  | "ListFilesResponse"
  | "DeleteFileResponse";

/** Throws with the validator's errors when `data` does not match the named OpenAI schema. */
export function assertMatchesSchema(name: SchemaName, data: unknown): void {
  const validate = ajv.getSchema(`${BATCH_SCHEMAS.has(name) ? "openai-batch" : "openai"}#/components/schemas/${name}`);
  if (!validate) throw new Error(`no schema ${name}`);
  if (!validate(data)) {
    throw new Error(`${name} mismatch: ${JSON.stringify(validate.errors)}\n${JSON.stringify(data).slice(0, 500)}`);
  }
}

/** Splits an SSE body into its `data:` payloads. */
export function sseData(text: string): string[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((block) =>
      block
        .split(/\r?\n/)
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""))
        .join("\n"),
    )
    .filter((d) => d !== "");
}
