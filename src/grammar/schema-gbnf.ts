import { toGbnf } from "./gbnf.js";
import { compileJsonSchema } from "./json-schema-grammar.js";

/** Schemas whose GBNF (or refusal) is kept: a client sends the same tool schemas with every request. */
const KEPT = 128;
const kept = new Map<string, { gbnf: string } | { refusal: Error }>();

/**
 * The GBNF of a JSON Schema, compiled once per distinct schema in this process (the frontend's
 * check, a llama-server worker's request body and a llama.cpp worker's grammar all ask for it); a
 * refusal is kept and thrown again. Least recently used dropped past 128.
 */
export function schemaGbnf(schema: unknown): string {
  const key = JSON.stringify(schema);
  let entry = kept.get(key);
  if (entry) {
    kept.delete(key);
  } else {
    try {
      entry = { gbnf: toGbnf(compileJsonSchema(schema)) };
    } catch (error) {
      entry = { refusal: error as Error };
    }
  }
  kept.set(key, entry);
  if (kept.size > KEPT) kept.delete(kept.keys().next().value as string);
  if ("refusal" in entry) throw entry.refusal;
  return entry.gbnf;
}
