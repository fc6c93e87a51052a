import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { fixNullable } from "./openai-spec.js";

// The Responses operation of the OpenAI spec and its schemas (test/fixtures/openai/README.md).
const SPEC = fileURLToPath(new URL("../fixtures/openai/openai-responses-subset.openapi.json", import.meta.url));
export const responsesSpec = JSON.parse(readFileSync(SPEC, "utf8")) as {
  components: { schemas: Record<string, Record<string, unknown>> };
};

const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
(addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
ajv.addFormat("unixtime", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 });
ajv.addSchema(fixNullable(responsesSpec) as object, "responses");

/** Throws with the validator's errors when `data` does not match the named schema of the Responses spec. */
export function assertMatchesResponsesSchema(name: "Response" | "ResponseStreamEvent" | "ErrorResponse", data: unknown): void {
  const validate = ajv.getSchema(`responses#/components/schemas/${name}`);
  if (!validate) throw new Error(`no schema ${name}`);
  if (!validate(data)) {
    throw new Error(`${name} mismatch: ${JSON.stringify(validate.errors?.slice(0, 5))}\n${JSON.stringify(data).slice(0, 600)}`);
  }
}
