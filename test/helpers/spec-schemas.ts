import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

/** OpenAPI 3.0's `nullable: true` (left in several 3.1 specs) → `anyOf [schema, null]`. */
function fixNullable(node: unknown): unknown {
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

/**
 * Loads an OpenAPI document (JSON) and returns a check that throws, with the validator's errors,
 * when data does not match `#/components/schemas/NAME` (../shared/specs/README.md's recipe).
 */
export function specSchemas(file: string): (name: string, data: unknown) => void {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  (addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addFormat("unixtime", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 });
  ajv.addSchema(fixNullable(JSON.parse(readFileSync(file, "utf8"))) as object, "spec");
  return (name, data) => {
    const validate = ajv.getSchema(`spec#/components/schemas/${name}`);
    if (!validate) throw new Error(`no schema ${name} in ${file}`);
    if (!validate(data))
      throw new Error(`${name} mismatch: ${JSON.stringify(validate.errors)}\n${JSON.stringify(data).slice(0, 500)}`);
  };
}
