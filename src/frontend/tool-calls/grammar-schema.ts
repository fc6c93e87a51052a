type Schema = Record<string, unknown>;

/** String formats node-llama-cpp's JSON-schema grammar knows; others are dropped (any string). */
const FORMATS = new Set(["date-time", "time", "date"]);

/**
 * Rewrites a tool's JSON schema into the subset node-llama-cpp turns into a grammar
 * (`GbnfJsonSchema`: type, const, enum, oneOf, properties/required/additionalProperties, items,
 * prefixItems, min/max items and lengths, `$defs` + `$ref`): `anyOf` becomes `oneOf`, a type list
 * holding object or array becomes a `oneOf`, `definitions` becomes `$defs`, a one-part `allOf` is
 * merged, and string formats it does not know are dropped. Keywords outside the subset (`pattern`,
 * `minimum`, …) are not enforced; what is generated still has the declared shape.
 */
export function toGrammarSchema(schema: unknown): unknown {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return schema;
  let s = { ...(schema as Schema) };
  if (Array.isArray(s.allOf) && s.allOf.length === 1) {
    const { allOf, ...rest } = s;
    s = { ...rest, ...(allOf[0] as Schema) };
  }
  if (s.definitions !== undefined && s.$defs === undefined) {
    const { definitions, ...rest } = s;
    s = { ...rest, $defs: definitions };
  }
  if (typeof s.$ref === "string") s.$ref = s.$ref.replace(/^#\/definitions\//, "#/$defs/");
  if (Array.isArray(s.anyOf) && s.oneOf === undefined) {
    const { anyOf, ...rest } = s;
    s = { ...rest, oneOf: anyOf };
  }
  if (Array.isArray(s.type) && s.type.some((t) => t === "object" || t === "array")) {
    const { type, ...rest } = s;
    return { oneOf: type.map((t) => toGrammarSchema({ ...rest, type: t })) };
  }
  if (s.type === undefined && s.properties !== undefined) s.type = "object";
  if (s.type === "string" && typeof s.format === "string" && !FORMATS.has(s.format)) delete s.format;
  const out: Schema = {};
  for (const [key, value] of Object.entries(s)) {
    if (key === "properties" || key === "$defs") out[key] = mapValues(value, toGrammarSchema);
    else if (key === "items" || key === "additionalProperties") out[key] = toGrammarSchema(value);
    else if (key === "oneOf" || key === "prefixItems") out[key] = Array.isArray(value) ? value.map(toGrammarSchema) : value;
    else out[key] = value;
  }
  return out;
}

function mapValues(value: unknown, f: (v: unknown) => unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, f(v)]));
}
