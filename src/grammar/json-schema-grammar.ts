import { alt, EMPTY, type Grammar, type GrammarNode, grammarSize, lit, opt, ref, rep, seq } from "./grammar-ir.js";
import { ANY_STRING, integerGrammar, JSON_NUMBER, lengthKeyword, numberGrammar, stringGrammar } from "./scalar-grammars.js";
import {
  escapePointer,
  KEYWORDS,
  MAX_REPEAT,
  mergeSchemas,
  type Schema,
  SchemaRefusal,
  UNENFORCED,
} from "./schema-vocabulary.js";

export { SchemaRefusal } from "./schema-vocabulary.js";

/**
 * Largest grammar compiled, counted as llama.cpp writes it out (`grammarSize`: a bounded repetition
 * as copies of its item); a bigger one is refused before it reaches a worker. A grammar of 257,614
 * parts cost llama.cpp 17 MiB and no time measurable beside one of 12,894 (docs/structured-output.md).
 */
export const MAX_GRAMMAR_SIZE = 1_000_000;

const WS = ref("ws");

/**
 * A JSON Schema (drafts 4, 7, 2019-09, 2020-12, OpenAPI's `nullable`) as a grammar whose every
 * sentence is a JSON text valid under the schema. Where a keyword allows more than the grammar can
 * express, the grammar keeps to a part of what it allows (an unanchored `pattern` matched whole,
 * optional properties beyond `properties` never written, integers within 16 digits, whitespace
 * between tokens at most one space); what it cannot keep to at all is refused with a
 * `SchemaRefusal` naming the keyword and its pointer.
 */
export function compileJsonSchema(schema: unknown): Grammar {
  return new Compiler(schema).compile();
}

class Compiler {
  readonly #root: unknown;
  readonly #rules = new Map<string, GrammarNode>();
  readonly #refRules = new Map<string, string>();
  #next = 0;
  /** allOf merges done: a recursive schema merged into itself would never end. */
  #merges = 0;

  constructor(root: unknown) {
    this.#root = root;
  }

  compile(): Grammar {
    this.#rules.set("root", EMPTY);
    this.#rules.set("ws", opt(lit(" ")));
    this.#rules.set("root", seq(this.#node(this.#root, ""), WS));
    const grammar = { rules: this.#rules };
    const size = grammarSize(grammar);
    if (size > MAX_GRAMMAR_SIZE) {
      throw new SchemaRefusal("$schema", "", `its grammar would have ${size} parts, more than the ${MAX_GRAMMAR_SIZE} allowed`);
    }
    return grammar;
  }

  #rule(prefix: string, body: (name: string) => GrammarNode): GrammarNode {
    const name = `${prefix}-${this.#next++}`;
    this.#rules.set(name, EMPTY);
    this.#rules.set(name, body(name));
    return ref(name);
  }

  #node(schema: unknown, pointer: string): GrammarNode {
    if (schema === true) return this.#anyValue();
    if (schema === false) throw new SchemaRefusal("false", pointer, "no value is valid under it");
    if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
      throw new SchemaRefusal("$schema", pointer, "a schema is an object or a boolean");
    }
    const s = schema as Schema;
    for (const key of Object.keys(s)) {
      if (UNENFORCED.has(key))
        throw new SchemaRefusal(key, `${pointer}/${escapePointer(key)}`, "armature does not enforce this keyword");
    }
    if (s.nullable === true) {
      const { nullable: _, ...rest } = s;
      return alt(this.#node(rest, pointer), lit("null"));
    }
    if (s.$ref !== undefined) return this.#ref(s, pointer);
    if (s.allOf !== undefined) {
      const constraining = Object.keys(s).filter((k) => k !== "allOf" && KEYWORDS.has(k) && k !== "$defs" && k !== "definitions");
      if (Array.isArray(s.allOf) && s.allOf.length === 1 && constraining.length === 0)
        return this.#node(s.allOf[0], `${pointer}/allOf/0`);
      if (++this.#merges > 64)
        throw new SchemaRefusal("allOf", `${pointer}/allOf`, "it merges a schema into itself without end (a recursive $ref)");
      return this.#node(this.#mergeAllOf(s, pointer), pointer);
    }
    if (s.anyOf !== undefined || s.oneOf !== undefined) return this.#union(s, pointer);
    if (s.const !== undefined) return this.#literal(s.const, s, `${pointer}/const`);
    if (s.enum !== undefined) {
      if (!Array.isArray(s.enum) || s.enum.length === 0)
        throw new SchemaRefusal("enum", `${pointer}/enum`, "an empty enum admits nothing");
      const allowed = s.enum.filter((value) => this.#typeAllows(s, value));
      if (allowed.length === 0) throw new SchemaRefusal("enum", `${pointer}/enum`, "none of its values has the schema's type");
      return alt(...allowed.map((value) => this.#literal(value, s, `${pointer}/enum`)));
    }
    const types = this.#types(s, pointer);
    return alt(...types.map((type) => this.#typed(type, s, pointer)));
  }

  /** A literal value, checked against the keywords beside it that the literal must also meet. */
  #literal(value: unknown, s: Schema, pointer: string): GrammarNode {
    const siblings = Object.keys(s).filter(
      (k) => KEYWORDS.has(k) && !["enum", "const", "type", "$defs", "definitions"].includes(k),
    );
    if (siblings.length > 0) {
      throw new SchemaRefusal(
        siblings[0] as string,
        pointer.replace(/\/(const|enum)$/, `/${siblings[0]}`),
        "beside const or enum",
      );
    }
    return lit(JSON.stringify(value));
  }

  #typeAllows(s: Schema, value: unknown): boolean {
    if (s.type === undefined) return true;
    const types = Array.isArray(s.type) ? s.type : [s.type];
    const kind =
      value === null
        ? "null"
        : Array.isArray(value)
          ? "array"
          : typeof value === "number" && Number.isInteger(value)
            ? "integer"
            : typeof value;
    return types.includes(kind) || (kind === "integer" && types.includes("number"));
  }

  #types(s: Schema, pointer: string): string[] {
    if (s.type !== undefined) {
      const list = Array.isArray(s.type) ? s.type : [s.type];
      for (const t of list) {
        if (!["null", "boolean", "integer", "number", "string", "array", "object"].includes(t as string)) {
          throw new SchemaRefusal("type", `${pointer}/type`, `'${String(t)}' is not a JSON Schema type`);
        }
      }
      // integer is a part of number: written as number, it would allow what integer does anyway.
      return list.includes("number") ? (list as string[]).filter((t) => t !== "integer") : (list as string[]);
    }
    const has = (...keys: string[]) => keys.some((k) => s[k] !== undefined);
    const inferred: string[] = [];
    if (has("properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties"))
      inferred.push("object");
    if (has("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "additionalItems")) inferred.push("array");
    if (has("minLength", "maxLength", "pattern", "format")) inferred.push("string");
    if (has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")) inferred.push("number");
    // Untyped with constraints of one kind: a value of that kind is valid, and so the grammar keeps to it.
    return inferred.length > 0 ? inferred : ["any"];
  }

  #typed(type: string, s: Schema, pointer: string): GrammarNode {
    switch (type) {
      case "null":
        return lit("null");
      case "boolean":
        return alt(lit("true"), lit("false"));
      case "integer":
        return integerGrammar(s, pointer);
      case "number":
        return numberGrammar(s, pointer);
      case "string":
        return stringGrammar(s, pointer, this.#anyString());
      case "array":
        return this.#array(s, pointer);
      case "object":
        return this.#object(s, pointer);
      default:
        return this.#anyValue();
    }
  }

  #array(s: Schema, pointer: string): GrammarNode {
    const min = lengthKeyword(s, "minItems", pointer) ?? 0;
    let max = lengthKeyword(s, "maxItems", pointer);
    if (max !== undefined && max < min) throw new SchemaRefusal("maxItems", `${pointer}/maxItems`, "is below minItems");
    if (s.uniqueItems === true && (max === undefined || max > 1)) {
      throw new SchemaRefusal(
        "uniqueItems",
        `${pointer}/uniqueItems`,
        "the grammar cannot keep items apart; it is enforced only with maxItems 1",
      );
    }
    // Tuples: prefixItems (2020-12) or an items array (drafts 4–2019-09) with additionalItems.
    const tupleKey = Array.isArray(s.prefixItems) ? "prefixItems" : Array.isArray(s.items) ? "items" : undefined;
    const tuple = tupleKey ? (s[tupleKey] as unknown[]) : [];
    const restKey = tupleKey === "items" ? "additionalItems" : "items";
    const restSchema = tupleKey === "items" ? s.additionalItems : s.items;
    const prefix = tuple.map((item, i) => this.#node(item, `${pointer}/${tupleKey}/${i}`));
    if (max !== undefined && prefix.length > max) {
      // Only the first max tuple items are written (the rest are optional in JSON Schema).
      prefix.length = max;
    }
    const extraMin = Math.max(0, min - prefix.length);
    if (max !== undefined) max = Math.min(max, prefix.length + Math.max(extraMin, MAX_REPEAT));
    const extraMax = max === undefined ? undefined : max - prefix.length;
    const sep = seq(lit(","), WS);
    if (prefix.length === 0) {
      if (restSchema === false) {
        if (min > 0) throw new SchemaRefusal("minItems", `${pointer}/minItems`, `more items than ${restKey} false allows`);
        return seq(lit("["), WS, lit("]"));
      }
      const item = this.#node(restSchema ?? true, `${pointer}/${restKey}`);
      return seq(lit("["), WS, this.#list(item, min, max), WS, lit("]"));
    }
    // The tuple written whole (JSON Schema allows fewer), then what minItems asks beyond it.
    const body: GrammarNode[] = prefix.map((item, i) => (i === 0 ? item : seq(sep, item)));
    if (restSchema === false || (restSchema === undefined && extraMin === 0)) {
      if (extraMin > 0)
        throw new SchemaRefusal("minItems", `${pointer}/minItems`, `more items than the ${prefix.length} the tuple allows`);
    } else if (extraMax === undefined || extraMax > 0) {
      const rest = this.#node(restSchema ?? true, `${pointer}/${restKey}`);
      body.push(rep(seq(sep, rest), extraMin, restSchema === undefined ? extraMin : extraMax));
    }
    return seq(lit("["), WS, ...body, WS, lit("]"));
  }

  /** `count` items separated by commas, from min to max (none when min is 0). */
  #list(item: GrammarNode, min: number, max: number | undefined): GrammarNode {
    if (max === 0) return EMPTY;
    const sep = seq(lit(","), WS);
    const tail = (n: number | undefined) => rep(seq(sep, item), Math.max(0, min - 1), n === undefined ? undefined : n - 1);
    const nonEmpty = seq(item, tail(max));
    return min === 0 ? opt(nonEmpty) : nonEmpty;
  }

  #object(s: Schema, pointer: string): GrammarNode {
    const properties = (s.properties ?? {}) as Record<string, unknown>;
    if (typeof properties !== "object" || Array.isArray(properties))
      throw new SchemaRefusal("properties", `${pointer}/properties`, "must be an object");
    const required = (s.required ?? []) as unknown[];
    if (!Array.isArray(required) || !required.every((r) => typeof r === "string")) {
      throw new SchemaRefusal("required", `${pointer}/required`, "must be a list of names");
    }
    const additional = s.additionalProperties;
    const patterns = (s.patternProperties ?? {}) as Record<string, unknown>;
    const keys = Object.keys(properties);
    for (const [pattern] of Object.entries(patterns)) {
      let re: RegExp;
      try {
        re = new RegExp(pattern, "u");
      } catch {
        throw new SchemaRefusal("patternProperties", `${pointer}/patternProperties`, `'${pattern}' is not a regular expression`);
      }
      const clash = [...keys, ...(required as string[])].find((k) => re.test(k));
      if (clash) {
        throw new SchemaRefusal(
          "patternProperties",
          `${pointer}/patternProperties/${escapePointer(pattern)}`,
          `it applies to property '${clash}' beside its own schema`,
        );
      }
    }
    const entries: { key: string; value: GrammarNode; required: boolean }[] = [];
    for (const name of required as string[]) {
      if (name in properties) continue;
      if (additional === false)
        throw new SchemaRefusal("required", `${pointer}/required`, `'${name}' is required but additionalProperties is false`);
      entries.push({ key: name, value: this.#node(additional ?? true, `${pointer}/additionalProperties`), required: true });
    }
    for (const key of keys) {
      entries.push({
        key,
        value: this.#node(properties[key], `${pointer}/properties/${escapePointer(key)}`),
        required: required.includes(key),
      });
    }
    const minProps = s.minProperties;
    const maxProps = s.maxProperties;
    const requiredCount = entries.filter((e) => e.required).length;
    const isMap = entries.length === 0 && additional !== false && Object.keys(patterns).length === 0;
    // At least one property where none is required: the grammar cannot leave them all out. More
    // than one is refused: a map could repeat a name, and JSON keeps only the last.
    const atLeastOne = minProps === 1 && requiredCount === 0 && (entries.length > 0 || isMap);
    if (minProps !== undefined && (typeof minProps !== "number" || (minProps > requiredCount && !atLeastOne))) {
      throw new SchemaRefusal(
        "minProperties",
        `${pointer}/minProperties`,
        "more properties than are required is enforced only for one",
      );
    }
    if (maxProps !== undefined && (typeof maxProps !== "number" || (maxProps < entries.length && !isMap))) {
      throw new SchemaRefusal("maxProperties", `${pointer}/maxProperties`, "fewer properties than are listed is not enforced");
    }
    if (isMap) {
      // A map: any names, each value under additionalProperties.
      const value = this.#node(additional ?? true, `${pointer}/additionalProperties`);
      const member = seq(this.#anyString(), WS, lit(":"), WS, value);
      const most = typeof maxProps === "number" ? Math.min(maxProps, MAX_REPEAT) : undefined;
      return seq(lit("{"), WS, this.#list(member, atLeastOne ? 1 : 0, most), WS, lit("}"));
    }
    const kv = (e: (typeof entries)[number]) => seq(lit(JSON.stringify(e.key)), WS, lit(":"), WS, e.value);
    const sep = seq(WS, lit(","), WS);
    if (entries.every((e) => e.required)) {
      const body = entries.flatMap((e, i) => (i === 0 ? [kv(e)] : [sep, kv(e)]));
      return seq(lit("{"), WS, ...body, WS, lit("}"));
    }
    // heads[i]: the members from entry i on, none written yet; tails[i]: the same after one was.
    const tails: GrammarNode[] = new Array(entries.length + 1);
    tails[entries.length] = EMPTY;
    // With minProperties 1, "none written" cannot reach the end: heads[n] does not exist.
    const heads: (GrammarNode | undefined)[] = new Array(entries.length + 1);
    heads[entries.length] = atLeastOne ? undefined : EMPTY;
    for (let i = entries.length - 1; i >= 0; i--) {
      const e = entries[i] as (typeof entries)[number];
      const nextTail = tails[i + 1] as GrammarNode;
      const nextHead = heads[i + 1];
      tails[i] = this.#rule("tail", () => (e.required ? seq(sep, kv(e), nextTail) : alt(seq(sep, kv(e), nextTail), nextTail)));
      heads[i] = this.#rule("head", () =>
        e.required || nextHead === undefined ? seq(kv(e), nextTail) : alt(seq(kv(e), nextTail), nextHead),
      );
    }
    return seq(lit("{"), WS, heads[0] as GrammarNode, WS, lit("}"));
  }

  #union(s: Schema, pointer: string): GrammarNode {
    const key = s.anyOf !== undefined ? "anyOf" : "oneOf";
    const branches = s[key];
    if (!Array.isArray(branches) || branches.length === 0)
      throw new SchemaRefusal(key, `${pointer}/${key}`, "must be a non-empty list");
    if (s.anyOf !== undefined && s.oneOf !== undefined) throw new SchemaRefusal("oneOf", `${pointer}/oneOf`, "beside anyOf");
    // Keywords beside the union hold in every branch: each branch becomes the two together.
    const siblings = Object.keys(s).filter((k) => k !== key && KEYWORDS.has(k) && k !== "$defs" && k !== "definitions");
    const shared = Object.fromEntries(siblings.map((k) => [k, s[k]]));
    const parts =
      siblings.length === 0 ? branches : branches.map((b, i) => this.#mergeBranch(shared, b, `${pointer}/${key}/${i}`));
    if (key === "oneOf" && !this.#disjoint(parts)) {
      throw new SchemaRefusal(
        "oneOf",
        `${pointer}/oneOf`,
        "its branches may overlap (a value valid under two breaks oneOf); only branches of distinct types, constants or discriminating properties are enforced",
      );
    }
    return alt(...parts.map((b, i) => this.#node(b, `${pointer}/${key}/${i}`)));
  }

  /** A union's branch with the keywords beside the union merged in. */
  #mergeBranch(shared: Schema, branch: unknown, pointer: string): unknown {
    const resolved = this.#resolve(branch);
    if (resolved === true) return shared;
    if (!resolved || typeof resolved !== "object")
      throw new SchemaRefusal("$schema", pointer, "a branch that is not a schema object");
    const r = resolved as Schema;
    const inner = r.anyOf !== undefined || r.oneOf !== undefined || r.allOf !== undefined;
    return inner ? { allOf: [shared, r] } : mergeSchemas(shared, r, pointer);
  }

  /**
   * Branches that no value can satisfy twice: each of its own types, distinct constants, or objects
   * that all require one property whose constant (or enum) values differ (a discriminator).
   */
  #disjoint(branches: unknown[]): boolean {
    const resolved = branches.map((b) => this.#resolve(b));
    if (this.#discriminated(resolved)) return true;
    const consts = resolved.map((b) =>
      b && typeof b === "object" && "const" in b ? JSON.stringify((b as Schema).const) : undefined,
    );
    if (consts.every((c) => c !== undefined)) return new Set(consts).size === consts.length;
    const typeSets = resolved.map((b) => {
      const t = b && typeof b === "object" ? (b as Schema).type : undefined;
      if (t === undefined) return undefined;
      const list = (Array.isArray(t) ? t : [t]) as string[];
      return new Set(list.flatMap((x) => (x === "number" ? ["number", "integer"] : [x])));
    });
    if (typeSets.some((t) => t === undefined)) return false;
    for (let i = 0; i < typeSets.length; i++) {
      for (let j = i + 1; j < typeSets.length; j++) {
        for (const t of typeSets[i] as Set<string>) if ((typeSets[j] as Set<string>).has(t)) return false;
      }
    }
    return true;
  }

  #discriminated(branches: unknown[]): boolean {
    const objects = branches.map((b) => (b && typeof b === "object" ? (b as Schema) : undefined));
    if (objects.some((o) => !o || typeof o.properties !== "object" || !Array.isArray(o.required))) return false;
    const first = objects[0] as Schema;
    for (const name of first.required as string[]) {
      const values = objects.map((o) => {
        if (!((o as Schema).required as string[]).includes(name)) return undefined;
        const p = this.#resolve(((o as Schema).properties as Schema)[name]) as Schema | undefined;
        if (p && "const" in p) return [JSON.stringify(p.const)];
        if (p && Array.isArray(p.enum)) return p.enum.map((v) => JSON.stringify(v));
        return undefined;
      });
      if (values.some((v) => v === undefined)) continue;
      const all = values.flat() as string[];
      if (new Set(all).size === all.length) return true;
    }
    return false;
  }

  #resolve(schema: unknown): unknown {
    let current = schema;
    for (
      let hops = 0;
      hops < 32 && current && typeof current === "object" && typeof (current as Schema).$ref === "string";
      hops++
    ) {
      current = this.#target((current as Schema).$ref as string, "");
    }
    return current;
  }

  #mergeAllOf(s: Schema, pointer: string): Schema {
    const parts = s.allOf;
    if (!Array.isArray(parts)) throw new SchemaRefusal("allOf", `${pointer}/allOf`, "must be a list");
    const { allOf: _, ...rest } = s;
    let merged: Schema = { ...rest };
    parts.forEach((part, i) => {
      const resolved = this.#resolve(part);
      if (resolved === true) return;
      if (!resolved || typeof resolved !== "object")
        throw new SchemaRefusal("allOf", `${pointer}/allOf/${i}`, "a part that is not a schema object");
      merged = mergeSchemas(merged, resolved as Schema, `${pointer}/allOf/${i}`);
    });
    return merged;
  }

  #ref(s: Schema, pointer: string): GrammarNode {
    const target = s.$ref;
    if (typeof target !== "string") throw new SchemaRefusal("$ref", `${pointer}/$ref`, "must be a string");
    const siblings = Object.keys(s).filter((k) => k !== "$ref" && KEYWORDS.has(k) && k !== "$defs" && k !== "definitions");
    if (siblings.length > 0) {
      return this.#node({ allOf: [{ $ref: target }, Object.fromEntries(siblings.map((k) => [k, s[k]]))] }, pointer);
    }
    const known = this.#refRules.get(target);
    if (known) return ref(known);
    const resolved = this.#target(target, pointer);
    const name = `ref-${this.#next++}`;
    this.#refRules.set(target, name);
    this.#rules.set(name, EMPTY);
    this.#rules.set(name, this.#node(resolved, target.slice(1)));
    return ref(name);
  }

  /** The schema a local `$ref` (`#`, `#/$defs/x`, any JSON pointer into the document) points at. */
  #target(target: string, pointer: string): unknown {
    if (!target.startsWith("#"))
      throw new SchemaRefusal("$ref", `${pointer}/$ref`, `only references within the schema (#/…) are followed, not '${target}'`);
    let current: unknown = this.#root;
    for (const raw of target.slice(1).split("/").slice(1)) {
      const key = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
      if (current === null || typeof current !== "object" || !(key in (current as object))) {
        throw new SchemaRefusal("$ref", `${pointer}/$ref`, `'${target}' points at nothing in the schema`);
      }
      current = (current as Record<string, unknown>)[key];
    }
    return current;
  }

  #shared(name: string, body: () => GrammarNode): string {
    if (!this.#rules.has(name)) this.#rules.set(name, body());
    return name;
  }

  /** Any JSON value (the schema `true`, or one with no constraint). */
  /** Any JSON string, as one shared rule. */
  #anyString(): GrammarNode {
    return ref(this.#shared("string", () => ANY_STRING));
  }

  #anyValue(): GrammarNode {
    if (!this.#rules.has("value")) {
      const string = this.#anyString();
      this.#rules.set("value", EMPTY);
      const value = ref("value");
      const member = seq(string, WS, lit(":"), WS, value);
      this.#rules.set(
        "value",
        alt(
          seq(lit("{"), WS, this.#list(member, 0, undefined), WS, lit("}")),
          seq(lit("["), WS, this.#list(value, 0, undefined), WS, lit("]")),
          string,
          JSON_NUMBER,
          lit("true"),
          lit("false"),
          lit("null"),
        ),
      );
    }
    return ref("value");
  }
}
