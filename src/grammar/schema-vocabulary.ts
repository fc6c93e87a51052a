/** A schema object, read keyword by keyword. */
export type Schema = Record<string, unknown>;

/** A keyword (at a JSON pointer into the schema) the grammar cannot enforce: refused, never dropped. */
export class SchemaRefusal extends Error {
  readonly keyword: string;
  /** JSON pointer of the keyword, e.g. `/properties/x/not`. */
  readonly pointer: string;

  constructor(keyword: string, pointer: string, why: string) {
    super(`'${keyword}' at ${pointer || "/"} cannot be enforced: ${why}`);
    this.name = "SchemaRefusal";
    this.keyword = keyword;
    this.pointer = pointer;
  }
}

/**
 * JSON Schema keywords that constrain and that the grammar does not hold to: refused by name.
 * Keywords outside the vocabulary are annotations by the specification (validators ignore them),
 * and so are read past like `title`.
 */
export const UNENFORCED = new Set([
  "not",
  "if",
  "then",
  "else",
  "dependencies",
  "dependentRequired",
  "dependentSchemas",
  "propertyNames",
  "contains",
  "minContains",
  "maxContains",
  "$dynamicRef",
  "$recursiveRef",
  "divisibleBy",
  "disallow",
  "extends",
]);

/** Keywords the compiler reads (each one enforced, or refused in the cases it cannot be). */
export const KEYWORDS = new Set([
  "type",
  "enum",
  "const",
  "properties",
  "required",
  "additionalProperties",
  "patternProperties",
  "unevaluatedProperties",
  "items",
  "prefixItems",
  "additionalItems",
  "unevaluatedItems",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "anyOf",
  "oneOf",
  "allOf",
  "$ref",
  "$defs",
  "definitions",
  "nullable",
  "minProperties",
  "maxProperties",
]);

/** Most items or characters a bounded repetition is written out for; larger bounds are lowered to it. */
export const MAX_REPEAT = 256;
/**
 * Most copies a repetition may be written out for at all: llama.cpp refuses a grammar whose
 * repetition asks for more (`MAX_REPETITION_THRESHOLD` in its grammar parser), so a lower bound
 * above it (`minLength`, `minItems`, a pattern's `{n,}`) is refused by name before any worker sees it.
 */
export const MAX_REPETITION = 2000;
/** Two schemas that must both hold, as one, where that is plain; a clash is refused naming the keyword. */
export function mergeSchemas(a: Schema, b: Schema, pointer: string): Schema {
  const out: Schema = { ...a };
  for (const [key, value] of Object.entries(b)) {
    if (!KEYWORDS.has(key)) continue;
    const mine = out[key];
    if (mine === undefined) {
      out[key] = value;
    } else if (key === "properties") {
      const props = { ...(mine as Schema) };
      for (const [name, schema] of Object.entries(value as Schema)) {
        props[name] = props[name] === undefined ? schema : { allOf: [props[name], schema] };
      }
      out.properties = props;
    } else if (key === "required") {
      out.required = [...new Set([...(mine as string[]), ...(value as string[])])];
    } else if (key === "minimum" || key === "minLength" || key === "minItems" || key === "exclusiveMinimum") {
      out[key] = Math.max(mine as number, value as number);
    } else if (key === "maximum" || key === "maxLength" || key === "maxItems" || key === "exclusiveMaximum") {
      out[key] = Math.min(mine as number, value as number);
    } else if (key === "type") {
      const left = new Set(Array.isArray(mine) ? mine : [mine]);
      const both = (Array.isArray(value) ? value : [value]).filter((t) => left.has(t) || (t === "integer" && left.has("number")));
      if (both.length === 0) throw new SchemaRefusal("type", `${pointer}/type`, "no value has both types");
      out.type = both.length === 1 ? both[0] : both;
    } else if (JSON.stringify(mine) !== JSON.stringify(value)) {
      throw new SchemaRefusal(key, `${pointer}/${key}`, "allOf parts that both set it differently are not merged");
    }
  }
  return out;
}

export function escapePointer(key: string): string {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}
