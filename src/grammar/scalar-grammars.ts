import { alt, charClass, type GrammarNode, lit, opt, rep, seq } from "./grammar-ir.js";
import { integerRange, MAX_INTEGER_DIGITS } from "./integer-range.js";
import { RegexRefusal, regexGrammar, repeatedClass } from "./regex-grammar.js";
import { MAX_REPEAT, MAX_REPETITION, type Schema, SchemaRefusal } from "./schema-vocabulary.js";
import { stringFormat } from "./string-formats.js";

/** One character of a JSON string: unescaped but for `"`, `\` and controls, or a short escape (no `\u`). */
export const STRING_CHAR = alt(
  charClass([["\0", "\x1f"], '"', "\\", "\x7f"], true),
  seq(lit("\\"), charClass(['"', "\\", "/", "b", "f", "n", "r", "t"])),
);

/** Any JSON string (its characters as above). */
export const ANY_STRING = seq(lit('"'), rep(STRING_CHAR, 0, undefined), lit('"'));

/** Any JSON number the grammar writes: an integer of 16 digits at most, an optional fraction. */
export const JSON_NUMBER = seq(
  integerRange(Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY),
  opt(seq(lit("."), rep(charClass([["0", "9"]]), 1, 16))),
);

/** The whole numbers within bounds (exclusive bounds stepped over). */
function wholeBounds(lo: number, hi: number, loOpen: boolean, hiOpen: boolean): { from: number; to: number } {
  return {
    from: Number.isFinite(lo) ? (loOpen && Number.isInteger(lo) ? lo + 1 : Math.ceil(lo)) : lo,
    to: Number.isFinite(hi) ? (hiOpen && Number.isInteger(hi) ? hi - 1 : Math.floor(hi)) : hi,
  };
}

function bounds(s: Schema, pointer: string): { lo: number; hi: number; loOpen: boolean; hiOpen: boolean } {
  let lo = Number.NEGATIVE_INFINITY;
  let hi = Number.POSITIVE_INFINITY;
  let loOpen = false;
  let hiOpen = false;
  const num = (key: string): number => {
    const v = s[key];
    if (typeof v !== "number" || !Number.isFinite(v)) throw new SchemaRefusal(key, `${pointer}/${key}`, "must be a number");
    return v;
  };
  if (s.minimum !== undefined) lo = num("minimum");
  if (s.maximum !== undefined) hi = num("maximum");
  // Draft 4: a boolean that makes minimum or maximum exclusive; later drafts: the bound itself.
  if (s.exclusiveMinimum === true) loOpen = true;
  else if (s.exclusiveMinimum !== undefined && s.exclusiveMinimum !== false) {
    const v = num("exclusiveMinimum");
    if (v >= lo) [lo, loOpen] = [v, true];
  }
  if (s.exclusiveMaximum === true) hiOpen = true;
  else if (s.exclusiveMaximum !== undefined && s.exclusiveMaximum !== false) {
    const v = num("exclusiveMaximum");
    if (v <= hi) [hi, hiOpen] = [v, true];
  }
  return { lo, hi, loOpen, hiOpen };
}

/** `integer`: bounds exact through digit ranges; `multipleOf` only 1. */
export function integerGrammar(s: Schema, pointer: string): GrammarNode {
  if (s.multipleOf !== undefined && s.multipleOf !== 1) {
    throw new SchemaRefusal("multipleOf", `${pointer}/multipleOf`, "only multipleOf 1 is enforced on integers");
  }
  const { lo, hi, loOpen, hiOpen } = bounds(s, pointer);
  const { from, to } = wholeBounds(lo, hi, loOpen, hiOpen);
  if (from > to) throw new SchemaRefusal("minimum", `${pointer}/minimum`, `no integer lies between ${lo} and ${hi}`);
  if (Math.abs(from) > 10 ** MAX_INTEGER_DIGITS && Math.abs(to) > 10 ** MAX_INTEGER_DIGITS && Math.sign(from) === Math.sign(to)) {
    throw new SchemaRefusal(
      "minimum",
      `${pointer}/minimum`,
      `integers of more than ${MAX_INTEGER_DIGITS} digits are not written`,
    );
  }
  return integerRange(from, to);
}

/** `number`: whole values within the bounds, fractions strictly inside them. */
export function numberGrammar(s: Schema, pointer: string): GrammarNode {
  if (s.multipleOf !== undefined) throw new SchemaRefusal("multipleOf", `${pointer}/multipleOf`, "not enforced on numbers");
  const { lo, hi, loOpen, hiOpen } = bounds(s, pointer);
  const fraction = seq(lit("."), rep(charClass([["0", "9"]]), 0, 15), charClass([["1", "9"]]));
  if (!Number.isFinite(lo) && !Number.isFinite(hi)) return JSON_NUMBER;
  const parts: GrammarNode[] = [];
  // Whole numbers within the bounds.
  const { from, to } = wholeBounds(lo, hi, loOpen, hiOpen);
  if (from <= to) parts.push(integerRange(from, to));
  // n.f with n ≥ 0: strictly between n and n + 1, so n ≥ lo and n + 1 ≤ hi keep it inside.
  const posFrom = Math.max(0, Number.isFinite(lo) ? Math.ceil(lo) : 0);
  const posTo = Number.isFinite(hi) ? Math.floor(hi) - 1 : Number.POSITIVE_INFINITY;
  if (posFrom <= posTo) parts.push(seq(integerRange(posFrom, posTo), fraction));
  // -m.f: strictly between -(m + 1) and -m, so m ≥ -hi and m + 1 ≤ -lo keep it inside.
  const negFrom = Math.max(0, Number.isFinite(hi) ? Math.ceil(-hi) : 0);
  const negTo = Number.isFinite(lo) ? Math.floor(-lo) - 1 : Number.POSITIVE_INFINITY;
  if (negFrom <= negTo) parts.push(seq(lit("-"), integerRange(negFrom, negTo), fraction));
  if (parts.length === 0) {
    throw new SchemaRefusal("minimum", `${pointer}/minimum`, `no number between ${lo} and ${hi} is written by the grammar`);
  }
  return alt(...parts);
}

/** A length keyword's value, checked. */
export function lengthKeyword(
  s: Schema,
  key: "minLength" | "maxLength" | "minItems" | "maxItems",
  pointer: string,
): number | undefined {
  const v = s[key];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0)
    throw new SchemaRefusal(key, `${pointer}/${key}`, "must be a non-negative integer");
  if (key.startsWith("min") && v > MAX_REPETITION) {
    throw new SchemaRefusal(key, `${pointer}/${key}`, `above ${MAX_REPETITION}, more than llama.cpp writes a repetition out for`);
  }
  return v;
}

/** `string`: a format, a pattern, or characters within the lengths; `anyString` for none of them. */
export function stringGrammar(s: Schema, pointer: string, anyString: GrammarNode): GrammarNode {
  const min = lengthKeyword(s, "minLength", pointer) ?? 0;
  const max = lengthKeyword(s, "maxLength", pointer);
  if (max !== undefined && max < min) throw new SchemaRefusal("maxLength", `${pointer}/maxLength`, "is below minLength");
  const bounded = s.minLength !== undefined || s.maxLength !== undefined;
  if (s.format !== undefined) {
    if (typeof s.format !== "string") throw new SchemaRefusal("format", `${pointer}/format`, "must be a string");
    const format = stringFormat(s.format);
    if (!format) throw new SchemaRefusal("format", `${pointer}/format`, `the format '${s.format}' is not enforced`);
    if (s.pattern !== undefined) throw new SchemaRefusal("pattern", `${pointer}/pattern`, "beside a format");
    if (bounded && (min > format.minLength || (max !== undefined && max < format.maxLength))) {
      throw new SchemaRefusal(
        max !== undefined ? "maxLength" : "minLength",
        `${pointer}/${max !== undefined ? "maxLength" : "minLength"}`,
        `beside the format '${s.format}'`,
      );
    }
    return seq(lit('"'), format.node, lit('"'));
  }
  if (s.pattern !== undefined) {
    if (typeof s.pattern !== "string") throw new SchemaRefusal("pattern", `${pointer}/pattern`, "must be a string");
    try {
      if (!bounded) return seq(lit('"'), regexGrammar(s.pattern), lit('"'));
      const single = repeatedClass(s.pattern);
      if (!single)
        throw new SchemaRefusal(
          "pattern",
          `${pointer}/pattern`,
          "with minLength or maxLength, only a pattern of one repeated class is enforced",
        );
      const lo = Math.max(single.min, min);
      const hi = Math.min(single.max ?? Number.POSITIVE_INFINITY, max ?? Number.POSITIVE_INFINITY);
      if (lo > hi) throw new SchemaRefusal("pattern", `${pointer}/pattern`, "no string of the lengths allowed matches it");
      return seq(
        lit('"'),
        rep(single.cls, lo, Number.isFinite(hi) ? Math.min(hi, Math.max(lo, MAX_REPEAT)) : undefined),
        lit('"'),
      );
    } catch (error) {
      if (error instanceof RegexRefusal) throw new SchemaRefusal("pattern", `${pointer}/pattern`, `it uses ${error.message}`);
      throw error;
    }
  }
  if (!bounded) return anyString;
  const upper = max === undefined ? undefined : Math.min(max, Math.max(min, MAX_REPEAT));
  return seq(lit('"'), rep(STRING_CHAR, min, upper), lit('"'));
}
