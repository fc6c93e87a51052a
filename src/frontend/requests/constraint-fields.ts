import { choiceAnswerGrammar, RegexRefusal, regexAnswerGrammar, SchemaRefusal, schemaGbnf, toGbnf } from "../../grammar/index.js";
import type { ResponseConstraint } from "../../protocol/index.js";
import { asObject, type Body, invalid } from "./field-checks.js";

/** The deepest schema a worker takes (the generate-request's `constraint`, `src/protocol/message-schemas.ts`). */
const MAX_SCHEMA_DEPTH = 64;
/** The longest regular expression, choice and grammar a worker takes (the same schema). */
const MAX_REGEX_LENGTH = 1 << 16;
const MAX_CHOICE_LENGTH = 1 << 16;
const MAX_CHOICES = 1024;
const MAX_GRAMMAR_LENGTH = 1 << 20;

/**
 * The fields that constrain the answer: OpenAI's `response_format`, vLLM's `structured_outputs`
 * (vLLM ≥ 0.12) or one of the `guided_*` fields it replaced; never two.
 */
const CONSTRAINT_FIELDS = [
  "response_format",
  "structured_outputs",
  "guided_json",
  "guided_regex",
  "guided_choice",
  "guided_grammar",
] as const;

/** The parts of vLLM's `structured_outputs` (its `StructuredOutputsParams`) that say what to constrain to. */
const STRUCTURED_KINDS = ["json", "regex", "choice", "grammar", "json_object"] as const;
/** Its options that change nothing at their default; any other value is refused by name. */
const STRUCTURED_DEFAULTS: Readonly<Record<string, unknown>> = {
  disable_fallback: false,
  disable_any_whitespace: false,
  disable_additional_properties: false,
};

/** The request's constraint on its answer, checked as far as the frontend can; 400 naming the field otherwise. */
export function parseConstraint(body: Body): ResponseConstraint | undefined {
  // `response_format: {"type": "text"}` asks for no constraint, so it stands beside any other.
  const format =
    body.response_format === undefined || body.response_format === null ? undefined : parseResponseFormat(body.response_format);
  const given = CONSTRAINT_FIELDS.filter(
    (field) => body[field] !== undefined && body[field] !== null && (field !== "response_format" || format !== undefined),
  );
  if (given.length > 1) {
    throw invalid(given[1] as string, `'${given[0]}' and '${given[1]}' both constrain the answer; send one`);
  }
  switch (given[0]) {
    case undefined:
      return undefined;
    case "response_format":
      return format;
    case "structured_outputs":
      return parseStructuredOutputs(body.structured_outputs);
    case "guided_json":
      return jsonSchema(body.guided_json, "guided_json");
    case "guided_regex":
      return regex(body.guided_regex, "guided_regex");
    case "guided_choice":
      return choice(body.guided_choice, "guided_choice");
    default:
      return grammar(body.guided_grammar, "guided_grammar");
  }
}

function parseResponseFormat(value: unknown): ResponseConstraint | undefined {
  const format = asObject(value, "response_format");
  switch (format.type) {
    case "text":
      return undefined;
    case "json_object":
      return { type: "json_object" };
    case "json_schema": {
      const spec = asObject(format.json_schema, "response_format.json_schema");
      return jsonSchema(spec.schema ?? {}, "response_format.json_schema.schema");
    }
    default:
      throw invalid("response_format.type", "'response_format.type' must be one of text, json_object, json_schema");
  }
}

/** vLLM's `structured_outputs`: exactly one of `json`, `regex`, `choice`, `grammar`, `json_object: true`. */
function parseStructuredOutputs(value: unknown): ResponseConstraint {
  const params = asObject(value, "structured_outputs");
  for (const [key, option] of Object.entries(params)) {
    if (option === undefined || option === null || (STRUCTURED_KINDS as readonly string[]).includes(key)) continue;
    if (key in STRUCTURED_DEFAULTS) {
      if (option === STRUCTURED_DEFAULTS[key]) continue;
      throw invalid(
        `structured_outputs.${key}`,
        `'structured_outputs.${key}' is not supported; only ${STRUCTURED_DEFAULTS[key]} is`,
      );
    }
    throw invalid(`structured_outputs.${key}`, `'structured_outputs.${key}' is not supported`);
  }
  const kinds = STRUCTURED_KINDS.filter((kind) => params[kind] !== undefined && params[kind] !== null && params[kind] !== false);
  if (kinds.length !== 1) {
    throw invalid(
      "structured_outputs",
      `'structured_outputs' must set exactly one of ${STRUCTURED_KINDS.join(", ")}${kinds.length > 1 ? `, got ${kinds.join(" and ")}` : ""}`,
    );
  }
  const kind = kinds[0] as (typeof STRUCTURED_KINDS)[number];
  const param = `structured_outputs.${kind}`;
  switch (kind) {
    case "json":
      return jsonSchema(params.json, param);
    case "regex":
      return regex(params.regex, param);
    case "choice":
      return choice(params.choice, param);
    case "grammar":
      return grammar(params.grammar, param);
    case "json_object":
      if (params.json_object !== true) throw invalid(param, `'${param}' must be a boolean`);
      return { type: "json_object" };
  }
}

/** A JSON schema (an object, or a JSON string as vLLM takes it), every keyword enforced or refused naming its pointer. */
function jsonSchema(value: unknown, param: string): ResponseConstraint {
  let schema: unknown = value;
  if (typeof value === "string") {
    try {
      schema = JSON.parse(value);
    } catch {
      throw invalid(param, `'${param}' must be a JSON schema, as an object or a JSON string`);
    }
  }
  const object = asObject(schema, param);
  if (nestedDeeperThan(object, MAX_SCHEMA_DEPTH)) {
    throw invalid(param, `'${param}' is nested deeper than ${MAX_SCHEMA_DEPTH} levels; flatten it or use $defs`);
  }
  try {
    schemaGbnf(object);
  } catch (error) {
    if (!(error instanceof SchemaRefusal)) throw error;
    throw invalid(`${param}${error.pointer}`, `'${param}': ${error.message}`);
  }
  return { type: "json_schema", schema: object };
}

/** The whole answer matches the regular expression; kept as written for engines that take it themselves. */
function regex(value: unknown, param: string): ResponseConstraint {
  if (typeof value !== "string" || value === "" || value.length > MAX_REGEX_LENGTH) {
    throw invalid(param, `'${param}' must be a non-empty regular expression of at most ${MAX_REGEX_LENGTH} characters`);
  }
  try {
    return { type: "grammar", gbnf: toGbnf(regexAnswerGrammar(value)), param, regex: value };
  } catch (error) {
    if (!(error instanceof RegexRefusal)) throw error;
    throw invalid(param, `'${param}' cannot be enforced: it uses ${error.message}`);
  }
}

/** The answer is exactly one of the strings; kept as written for engines that take it themselves. */
function choice(value: unknown, param: string): ResponseConstraint {
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length > MAX_CHOICES ||
    !value.every((c) => typeof c === "string" && c !== "" && c.length <= MAX_CHOICE_LENGTH)
  ) {
    throw invalid(param, `'${param}' must be a list of 1 to 1,024 non-empty strings of at most ${MAX_CHOICE_LENGTH} characters`);
  }
  const choices = value as string[];
  return { type: "grammar", gbnf: toGbnf(choiceAnswerGrammar(choices)), param, choices };
}

/** A GBNF grammar, given to llama.cpp as written; one it does not read is refused by the worker naming `param`. */
function grammar(value: unknown, param: string): ResponseConstraint {
  if (typeof value !== "string" || value.trim() === "" || value.length > MAX_GRAMMAR_LENGTH) {
    throw invalid(param, `'${param}' must be a GBNF grammar (llama.cpp's syntax, a root rule) of at most 1 MiB`);
  }
  return { type: "grammar", gbnf: value, param };
}

/** Whether `value` has anything below `levels` levels of nesting; stops descending there, so it never recurses deeper. */
function nestedDeeperThan(value: unknown, levels: number): boolean {
  if (value === null || typeof value !== "object") return false;
  const children = Object.values(value);
  return levels === 0 ? children.length > 0 : children.some((child) => nestedDeeperThan(child, levels - 1));
}
