import { alt, charClass, EMPTY, type GrammarNode, lit, rep, seq } from "./grammar-ir.js";

/** Digits an unbounded integer may have: llama.cpp's converter allows 16 too, so no model stalls in digits. */
export const MAX_INTEGER_DIGITS = 16;
const LARGEST = 10 ** MAX_INTEGER_DIGITS - 1;

const DIGIT = charClass([["0", "9"]]);

/**
 * JSON integers (no leading zeros, `-0` never written) from `lo` to `hi` inclusive, either side
 * possibly infinite; infinite sides stop at 16 digits. Exact for every bound within that.
 */
export function integerRange(lo: number, hi: number): GrammarNode {
  const parts: GrammarNode[] = [];
  if (lo < 0) {
    const magnitudeLo = hi < 0 ? -hi : 1;
    const magnitudeHi = Math.min(-lo, LARGEST);
    if (magnitudeLo <= magnitudeHi) parts.push(seq(lit("-"), naturalRange(magnitudeLo, magnitudeHi)));
  }
  if (hi >= 0) {
    const from = Math.max(0, lo);
    const to = Math.min(hi, LARGEST);
    if (from <= to) parts.push(naturalRange(from, to));
  }
  if (parts.length === 0) throw new RangeError(`no integer lies between ${lo} and ${hi}`);
  return alt(...parts);
}

/** Non-negative integers from `lo` to `hi` (both finite, lo ≤ hi), by digit count. */
function naturalRange(lo: number, hi: number): GrammarNode {
  const parts: GrammarNode[] = [];
  const loDigits = String(lo).length;
  const hiDigits = String(hi).length;
  for (let digits = loDigits; digits <= hiDigits; digits++) {
    const from = Math.max(lo, digits === 1 ? 0 : 10 ** (digits - 1));
    const to = Math.min(hi, 10 ** digits - 1);
    if (from <= to) parts.push(sameLength(String(from), String(to)));
  }
  return alt(...parts);
}

/** Digit strings of one length from `a` to `b` (a ≤ b), digit by digit. */
function sameLength(a: string, b: string): GrammarNode {
  if (a.length === 0) return EMPTY;
  const restA = a.slice(1);
  const restB = b.slice(1);
  const first = Number(a[0]);
  const last = Number(b[0]);
  if (first === last) return restA.length === 0 ? lit(String(first)) : seq(lit(String(first)), sameLength(restA, restB));
  if (/^0*$/.test(restA) && /^9*$/.test(restB)) return seq(digitClass(first, last), ...digits(restA.length));
  if (restA.length === 0) return digitClass(first, last);
  const parts: GrammarNode[] = [seq(lit(String(first)), sameLength(restA, "9".repeat(restA.length)))];
  if (first + 1 <= last - 1) parts.push(seq(digitClass(first + 1, last - 1), ...digits(restA.length)));
  parts.push(seq(lit(String(last)), sameLength("0".repeat(restB.length), restB)));
  return alt(...parts);
}

/** Exactly `count` digits (nothing for 0). */
function digits(count: number): GrammarNode[] {
  return count === 0 ? [] : [rep(DIGIT, count, count)];
}

function digitClass(from: number, to: number): GrammarNode {
  return from === to ? lit(String(from)) : charClass([[String(from), String(to)]]);
}
