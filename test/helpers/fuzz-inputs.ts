/**
 * Hostile inputs for the fuzz test, all drawn from one seeded generator so that a failure
 * reproduces with the seed it printed.
 */
import { SeededRandom } from "../../src/engines/seeded-random.js";

/** The product's own seeded generator (mulberry32), with what the fuzzer draws besides numbers. */
export class Prng extends SeededRandom {
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  bytes(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }
}

const ODD_STRINGS = [
  "",
  "\u0000",
  "\ud800",
  "\udfff\ud800",
  "%{jndi:ldap://x}",
  "../../../../etc/passwd",
  "armature.>",
  "*",
  ">",
  "_INBOX.>",
  "a b",
  "\r\n\r\n",
  "__proto__",
  "constructor",
  "1e400",
  "-1",
  "NaN",
  "🦀".repeat(50),
];

const ODD_NUMBERS = [0, -0, -1, 1, 0.5, 1e308, -1e308, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, -(2 ** 63), 5e-324, 123456789.123];

const ODD_KEYS = ["__proto__", "constructor", "prototype", "$u64", "type", "t", "v", "toString", "", "a".repeat(300)];

export function randomString(rng: Prng, maxLength = 40): string {
  if (rng.chance(0.3)) return rng.pick(ODD_STRINGS);
  const length = rng.int(maxLength + 1);
  let out = "";
  for (let i = 0; i < length; i++) {
    const kind = rng.int(4);
    out += String.fromCharCode(kind === 0 ? rng.int(0x10000) : kind === 1 ? rng.int(32) : 32 + rng.int(95));
  }
  return out;
}

export function randomNumber(rng: Prng): number {
  return rng.chance(0.5) ? rng.pick(ODD_NUMBERS) : (rng.next() - 0.5) * 10 ** rng.int(20);
}

/** Any JSON value: scalars, odd numbers and strings, arrays, objects with odd keys, `$u64` wrappers. */
export function randomJson(rng: Prng, depth = 3): unknown {
  const kind = rng.int(depth > 0 ? 9 : 6);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return randomNumber(rng);
    case 3:
      return randomString(rng);
    case 4:
      return { $u64: rng.pick(["abc", "", "-1", "1e3", "18446744073709551616", "0x10", " 12 "]) };
    case 5:
      return rng.pick([[], {}, "", 0]);
    case 6:
    case 7:
      return Array.from({ length: rng.int(5) }, () => randomJson(rng, depth - 1));
    default: {
      const out: Record<string, unknown> = {};
      for (let i = rng.int(5); i > 0; i--) {
        out[rng.chance(0.4) ? rng.pick(ODD_KEYS) : randomString(rng, 8)] = randomJson(rng, depth - 1);
      }
      return out;
    }
  }
}

/** A value of a type unlike `value`'s, or a hostile one of the same type. */
export function wrongValue(rng: Prng, value: unknown): unknown {
  const candidates: unknown[] = [
    randomJson(rng, 2),
    null,
    String(value),
    [value],
    { value },
    randomNumber(rng),
    randomString(rng, 2000),
    rng.chance(0.5),
  ];
  if (typeof value === "number") candidates.push(-value, value * 1e12, Number.MAX_SAFE_INTEGER, -1, 1.5);
  if (typeof value === "string") candidates.push("x".repeat(200_000), "");
  if (Array.isArray(value))
    candidates.push(
      Array.from({ length: 50_000 }, () => value[0]),
      [],
    );
  return rng.pick(candidates);
}

/** `depth` nested arrays as JSON text, e.g. `[[[…]]]`, or objects `{"a":{"a":…}}`. */
export function deepNesting(depth: number, shape: "array" | "object" = "array"): string {
  return shape === "array" ? "[".repeat(depth) + "]".repeat(depth) : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

/** Every path (`["messages", 0, "content"]`) to a leaf or container of `value`. */
export function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const paths: (string | number)[][] = prefix.length > 0 ? [prefix] : [];
  if (value !== null && typeof value === "object") {
    for (const [key, child] of Object.entries(value)) {
      paths.push(...pathsOf(child, [...prefix, Array.isArray(value) ? Number(key) : key]));
    }
  }
  return paths;
}

/** A deep copy of `value` with the node at `path` replaced. */
export function replaceAt(value: unknown, path: readonly (string | number)[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path as [string | number, ...(string | number)[]];
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  copy[head] = replaceAt(copy[head], rest, replacement);
  return copy;
}
