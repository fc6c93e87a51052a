import { alt, charClass, type GrammarNode, lit, rep, seq } from "./grammar-ir.js";
import { integerRange } from "./integer-range.js";

/** A format's strings (without the quotes) and the lengths they can have. */
export interface StringFormat {
  readonly node: GrammarNode;
  readonly minLength: number;
  readonly maxLength: number;
}

const DIGIT = charClass([["0", "9"]]);
const HEX = charClass([
  ["0", "9"],
  ["a", "f"],
]);
const ALNUM = charClass([
  ["a", "z"],
  ["0", "9"],
]);
const digits = (n: number) => rep(DIGIT, n, n);
const twoDigits = (lo: number, hi: number): GrammarNode =>
  alt(...Array.from({ length: hi - lo + 1 }, (_, i) => lit(String(lo + i).padStart(2, "0"))));

/** YYYY-MM-DD, days 01–28: a date in every month of every year (no calendar needed to stay valid). */
const DATE = seq(digits(4), lit("-"), twoDigits(1, 12), lit("-"), twoDigits(1, 28));
/** HH:MM:SS in UTC, as RFC 3339's full-time requires an offset. */
const TIME = seq(twoDigits(0, 23), lit(":"), twoDigits(0, 59), lit(":"), twoDigits(0, 59), lit("Z"));
const LABEL = rep(ALNUM, 1, 32);
const TLD = rep(charClass([["a", "z"]]), 2, 6);

const FORMATS: Readonly<Record<string, StringFormat>> = {
  date: { node: DATE, minLength: 10, maxLength: 10 },
  time: { node: TIME, minLength: 9, maxLength: 9 },
  "date-time": { node: seq(DATE, lit("T"), TIME), minLength: 20, maxLength: 20 },
  uuid: {
    node: seq(
      rep(HEX, 8, 8),
      lit("-"),
      rep(HEX, 4, 4),
      lit("-"),
      rep(HEX, 4, 4),
      lit("-"),
      rep(HEX, 4, 4),
      lit("-"),
      rep(HEX, 12, 12),
    ),
    minLength: 36,
    maxLength: 36,
  },
  email: { node: seq(LABEL, lit("@"), LABEL, lit("."), TLD), minLength: 6, maxLength: 72 },
  hostname: { node: seq(LABEL, rep(seq(lit("."), LABEL), 0, 3)), minLength: 1, maxLength: 131 },
  ipv4: {
    node: seq(
      integerRange(0, 255),
      lit("."),
      integerRange(0, 255),
      lit("."),
      integerRange(0, 255),
      lit("."),
      integerRange(0, 255),
    ),
    minLength: 7,
    maxLength: 15,
  },
  ipv6: { node: seq(rep(HEX, 1, 4), rep(seq(lit(":"), rep(HEX, 1, 4)), 7, 7)), minLength: 15, maxLength: 39 },
  uri: {
    node: seq(lit("https://"), LABEL, lit("."), TLD, rep(seq(lit("/"), rep(ALNUM, 1, 16)), 0, 4)),
    minLength: 12,
    maxLength: 114,
  },
};

/** The grammar of a `format` armature enforces; undefined for the others (refused by the caller). */
export function stringFormat(name: string): StringFormat | undefined {
  return Object.hasOwn(FORMATS, name) ? FORMATS[name] : undefined;
}
