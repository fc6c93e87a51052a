import { alt, EMPTY, type GrammarNode, lit, rep, seq } from "./grammar-ir.js";
import { MAX_REPEAT, MAX_REPETITION } from "./schema-vocabulary.js";

/** A regular-expression feature the grammar cannot hold, named for the refusal. */
export class RegexRefusal extends Error {}

/** Code points a JSON string holds only escaped: `"`, `\` and the controls. Classes leave them out. */
const NEEDS_ESCAPE: readonly (readonly [number, number])[] = [
  [0x00, 0x1f],
  [0x22, 0x22],
  [0x5c, 0x5c],
  [0x7f, 0x7f],
];

type Range = readonly [number, number];

/**
 * The contents of a JSON string (between the quotes) that fully match `pattern` (ECMA-262
 * syntax, as JSON Schema's `pattern`): literals, `.`, classes with ranges and negation, `\d \w \s`
 * and their negations, groups, alternation, `* + ? {n} {n,} {n,m}` (lazy or not). A pattern
 * matches anywhere in a string, so a whole-string match is a subset of what it allows, and `^`/`$`
 * are accepted at its ends. Classes never produce `"`, `\` or a control character (a JSON string
 * would need them escaped); a literal `"` or `\` is written escaped. Lookarounds, backreferences,
 * word boundaries and Unicode property escapes throw a `RegexRefusal` naming them.
 */
export function regexGrammar(pattern: string, options: { readonly json?: boolean } = {}): GrammarNode {
  return new Parser(pattern, options.json ?? true).parse();
}

/** A regex that is one class repeated (`[a-z]+`, `\d{2,4}`): the class and its bounds, else undefined. */
export function repeatedClass(pattern: string): { cls: GrammarNode; min: number; max: number | undefined } | undefined {
  const node = regexGrammar(pattern);
  if (node.k === "rep" && node.item.k === "class") return { cls: node.item, min: node.min, max: node.max };
  if (node.k === "class") return { cls: node, min: 1, max: 1 };
  return undefined;
}

class Parser {
  readonly #chars: string[];
  /** Inside a JSON string (escapes written, classes without `"` `\` and controls), or raw text. */
  readonly #json: boolean;
  #pos = 0;

  constructor(pattern: string, json: boolean) {
    this.#chars = [...pattern];
    this.#json = json;
  }

  parse(): GrammarNode {
    if (this.#peek() === "^") this.#pos++;
    const node = this.#alternation();
    if (this.#peek() === "$") this.#pos++;
    if (this.#pos < this.#chars.length) {
      const at = this.#peek();
      throw new RegexRefusal(
        at === "^" || at === "$" ? `an anchor '${at}' inside the pattern` : `'${at}' at position ${this.#pos}`,
      );
    }
    return node;
  }

  #peek(offset = 0): string | undefined {
    return this.#chars[this.#pos + offset];
  }

  #alternation(): GrammarNode {
    const branches = [this.#sequence()];
    while (this.#peek() === "|") {
      this.#pos++;
      branches.push(this.#sequence());
    }
    return alt(...branches);
  }

  #sequence(): GrammarNode {
    const items: GrammarNode[] = [];
    for (;;) {
      const c = this.#peek();
      if (c === undefined || c === "|" || c === ")") break;
      if (c === "$" && this.#pos === this.#chars.length - 1) break;
      items.push(this.#quantified(this.#atom()));
    }
    return items.length === 0 ? EMPTY : seq(...items);
  }

  #quantified(atom: GrammarNode): GrammarNode {
    let node = atom;
    for (;;) {
      const c = this.#peek();
      let bounds: [number, number | undefined] | undefined;
      if (c === "*") bounds = [0, undefined];
      else if (c === "+") bounds = [1, undefined];
      else if (c === "?") bounds = [0, 1];
      else if (c === "{") bounds = this.#braces();
      if (!bounds) return node;
      if (c !== "{") this.#pos++;
      if (this.#peek() === "?") this.#pos++; // lazy: the same strings
      node = rep(node, bounds[0], bounds[1]);
    }
  }

  /** `{n}`, `{n,}`, `{n,m}` at the position; anything else is a literal `{` (as ECMA-262 reads it). */
  #braces(): [number, number | undefined] | undefined {
    const rest = this.#chars.slice(this.#pos).join("");
    const match = /^\{(\d+)(,(\d*))?\}/.exec(rest);
    if (!match) return undefined;
    this.#pos += [...match[0]].length;
    const min = Number(match[1]);
    const max = match[2] === undefined ? min : match[3] === "" ? undefined : Number(match[3]);
    if (max !== undefined && max < min) throw new RegexRefusal(`a quantifier {${min},${max}}`);
    if (min > MAX_REPETITION) {
      throw new RegexRefusal(
        `a quantifier {${min},…}: more than ${MAX_REPETITION} repetitions, which llama.cpp does not write out`,
      );
    }
    // A longer upper bound is lowered, as for maxLength: the grammar writes fewer, never more.
    return [min, max === undefined ? undefined : Math.min(max, Math.max(min, MAX_REPEAT))];
  }

  #atom(): GrammarNode {
    const c = this.#chars[this.#pos++] as string;
    if (c === "(") {
      if (this.#peek() === "?") {
        const kind = this.#peek(1);
        if (kind === ":") this.#pos += 2;
        else if (kind === "<" && this.#peek(2) !== "=" && this.#peek(2) !== "!") {
          while (this.#peek() !== undefined && this.#peek() !== ">") this.#pos++;
          this.#pos++;
        } else throw new RegexRefusal("a lookaround");
      }
      const inner = this.#alternation();
      if (this.#chars[this.#pos++] !== ")") throw new RegexRefusal("an unclosed group");
      return inner;
    }
    if (c === "[") return this.#charClass();
    if (c === ".") return this.#json ? classNode([[0x20, 0x10ffff]], false) : { k: "class", ranges: LINE_ENDS, negated: true };
    if (c === "\\") return this.#escape(false) as GrammarNode;
    if (c === "*" || c === "+" || c === "?") throw new RegexRefusal(`a quantifier '${c}' with nothing before it`);
    return this.#literal(c);
  }

  /** An escape after `\`: a node, or in a class the ranges it stands for. */
  #escape(inClass: true): Range[];
  #escape(inClass: false): GrammarNode;
  #escape(inClass: boolean): GrammarNode | Range[] {
    const c = this.#chars[this.#pos++];
    if (c === undefined) throw new RegexRefusal("a trailing backslash");
    const sets: Record<string, { ranges: Range[]; negated: boolean }> = {
      d: { ranges: [[0x30, 0x39]], negated: false },
      D: { ranges: [[0x30, 0x39]], negated: true },
      w: {
        ranges: [
          [0x30, 0x39],
          [0x41, 0x5a],
          [0x5f, 0x5f],
          [0x61, 0x7a],
        ],
        negated: false,
      },
      W: {
        ranges: [
          [0x30, 0x39],
          [0x41, 0x5a],
          [0x5f, 0x5f],
          [0x61, 0x7a],
        ],
        negated: true,
      },
      // Whitespace a JSON string holds unescaped: the space alone.
      s: { ranges: [[0x20, 0x20]], negated: false },
      S: {
        ranges: [
          [0x09, 0x0d],
          [0x20, 0x20],
          [0xa0, 0xa0],
          [0xfeff, 0xfeff],
        ],
        negated: true,
      },
    };
    const set = sets[c];
    if (set) {
      if (inClass) {
        if (set.negated) throw new RegexRefusal(`\\${c} inside a class`);
        return set.ranges;
      }
      return this.#class(set.ranges, set.negated);
    }
    if (/[1-9]/.test(c)) throw new RegexRefusal("a backreference");
    if (c === "b" || c === "B") throw new RegexRefusal(`a word boundary \\${c}`);
    if (c === "p" || c === "P") throw new RegexRefusal(`a Unicode property escape \\${c}`);
    const simple: Record<string, string> = { n: "\n", t: "\t", r: "\r", f: "\f", v: "\v", 0: "\0" };
    let char = simple[c] ?? c;
    if (c === "u" || c === "x") {
      const digits = c === "u" ? 4 : 2;
      const hex = this.#chars.slice(this.#pos, this.#pos + digits).join("");
      if (!new RegExp(`^[0-9a-fA-F]{${digits}}$`).test(hex)) throw new RegexRefusal(`an escape \\${c}${hex}`);
      this.#pos += digits;
      char = String.fromCodePoint(Number.parseInt(hex, 16));
    } else if (/[a-zA-Z]/.test(c) && simple[c] === undefined) {
      throw new RegexRefusal(`an escape \\${c}`);
    }
    const point = char.codePointAt(0) as number;
    return inClass ? [[point, point]] : this.#literal(char);
  }

  #literal(char: string): GrammarNode {
    return this.#json ? literal(char) : lit(char);
  }

  #class(ranges: readonly Range[], negated: boolean): GrammarNode {
    return this.#json ? classNode(ranges, negated) : { k: "class", ranges: [...ranges], negated };
  }

  #charClass(): GrammarNode {
    const negated = this.#peek() === "^";
    if (negated) this.#pos++;
    const ranges: Range[] = [];
    let first = true;
    for (;;) {
      const c = this.#chars[this.#pos++];
      if (c === undefined) throw new RegexRefusal("an unclosed class");
      if (c === "]" && !first) break;
      first = false;
      let lo: Range[];
      if (c === "\\") lo = this.#escape(true);
      else {
        const point = c.codePointAt(0) as number;
        lo = [[point, point]];
      }
      if (
        this.#peek() === "-" &&
        this.#peek(1) !== "]" &&
        this.#peek(1) !== undefined &&
        lo.length === 1 &&
        lo[0]?.[0] === lo[0]?.[1]
      ) {
        this.#pos++;
        const d = this.#chars[this.#pos++] as string;
        const hiRanges = d === "\\" ? this.#escape(true) : [[d.codePointAt(0) as number, d.codePointAt(0) as number] as Range];
        const hi = hiRanges[0];
        if (hiRanges.length !== 1 || !hi || hi[0] !== hi[1]) throw new RegexRefusal("a range ending in a class");
        const from = (lo[0] as Range)[0];
        if (hi[0] < from) throw new RegexRefusal("a range out of order");
        ranges.push([from, hi[0]]);
      } else {
        ranges.push(...lo);
      }
    }
    return this.#class(ranges, negated);
  }
}

/** ECMAScript's line terminators, which `.` does not match. */
const LINE_ENDS: readonly Range[] = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];

/** A class without the code points a JSON string would need escaped. */
function classNode(ranges: readonly Range[], negated: boolean): GrammarNode {
  if (negated) return { k: "class", ranges: [...ranges, ...NEEDS_ESCAPE], negated: true };
  const allowed = ranges.flatMap((r) => subtract(r, NEEDS_ESCAPE));
  if (allowed.length === 0) throw new RegexRefusal("a class of characters a JSON string holds only escaped");
  return { k: "class", ranges: allowed, negated: false };
}

function subtract(range: Range, holes: readonly Range[]): Range[] {
  let pieces: Range[] = [range];
  for (const [hlo, hhi] of holes) {
    pieces = pieces.flatMap(([lo, hi]): Range[] => {
      if (hhi < lo || hlo > hi) return [[lo, hi]];
      const out: Range[] = [];
      if (lo < hlo) out.push([lo, hlo - 1]);
      if (hi > hhi) out.push([hhi + 1, hi]);
      return out;
    });
  }
  return pieces;
}

/** One character of the pattern as it is written inside a JSON string. */
function literal(char: string): GrammarNode {
  const escapes: Record<string, string> = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\b": "\\b",
    "\f": "\\f",
  };
  const escaped = escapes[char];
  if (escaped) return lit(escaped);
  const point = char.codePointAt(0) as number;
  if (point < 0x20 || point === 0x7f) return lit(`\\u${point.toString(16).padStart(4, "0")}`);
  return lit(char);
}
