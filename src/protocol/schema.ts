/**
 * Small, strict validators for messages that cross a plane. A schema's `parse` returns the value
 * typed, or throws `MessageInvalidError` naming the path of the first field at fault. Every bound
 * is explicit (string length, array length, integer range), so a hostile peer cannot make a reader
 * walk or keep more than a message of that kind could honestly hold.
 */
export class MessageInvalidError extends Error {
  /** Where in the message the fault is, e.g. `events[3].blocks[0].blockHash`. */
  readonly path: string;

  constructor(path: string, problem: string) {
    super(`${path || "message"} ${problem}`);
    this.name = "MessageInvalidError";
    this.path = path;
  }
}

export interface Schema<T> {
  /** Returns `value` as a `T`, or throws `MessageInvalidError`. */
  parse(value: unknown, path?: string): T;
}

const schema = <T>(parse: (value: unknown, path: string) => T): Schema<T> => ({
  parse: (value, path = "") => parse(value, path),
});

const describe = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : typeof value;

/** A string of at most `maxLength` characters (default 256), optionally matching `pattern`. */
export function str(options: { maxLength?: number; pattern?: RegExp } = {}): Schema<string> {
  const maxLength = options.maxLength ?? 256;
  return schema((value, path) => {
    if (typeof value !== "string") throw new MessageInvalidError(path, `must be a string, got ${describe(value)}`);
    if (value.length > maxLength) throw new MessageInvalidError(path, `is longer than ${maxLength} characters`);
    if (options.pattern && !options.pattern.test(value)) throw new MessageInvalidError(path, `does not match ${options.pattern}`);
    return value;
  });
}

/** A safe integer in `[min, max]` (default 0..MAX_SAFE_INTEGER). */
export function int(min = 0, max = Number.MAX_SAFE_INTEGER): Schema<number> {
  return schema((value, path) => {
    if (typeof value !== "number" || !Number.isSafeInteger(value)) {
      throw new MessageInvalidError(path, `must be an integer, got ${describe(value)}`);
    }
    if (value < min || value > max) throw new MessageInvalidError(path, `must be in ${min}..${max}, got ${value}`);
    return value;
  });
}

/** A finite number in `[min, max]`. */
export function num(min = Number.NEGATIVE_INFINITY, max = Number.POSITIVE_INFINITY): Schema<number> {
  return schema((value, path) => {
    if (typeof value !== "number" || !Number.isFinite(value)) {
      throw new MessageInvalidError(path, `must be a finite number, got ${describe(value)}`);
    }
    if (value < min || value > max) throw new MessageInvalidError(path, `must be in ${min}..${max}, got ${value}`);
    return value;
  });
}

export const bool: Schema<boolean> = schema((value, path) => {
  if (typeof value !== "boolean") throw new MessageInvalidError(path, `must be a boolean, got ${describe(value)}`);
  return value;
});

const U64_MAX = (1n << 64n) - 1n;

/** An unsigned 64-bit hash, as the wire codec decodes `{"$u64": "…"}`. */
export const u64: Schema<bigint> = schema((value, path) => {
  if (typeof value !== "bigint" || value < 0n || value > U64_MAX) {
    throw new MessageInvalidError(path, `must be a u64, got ${describe(value)}`);
  }
  return value;
});

/** One of the given string literals. */
export function literal<const T extends string>(...choices: readonly T[]): Schema<T> {
  return schema((value, path) => {
    if (typeof value !== "string" || !(choices as readonly string[]).includes(value)) {
      throw new MessageInvalidError(path, `must be one of ${choices.join(", ")}`);
    }
    return value as T;
  });
}

/** An array of at most `maxLength` items, each checked by `item`. */
export function arrayOf<T>(item: Schema<T>, maxLength: number): Schema<T[]> {
  return schema((value, path) => {
    if (!Array.isArray(value)) throw new MessageInvalidError(path, `must be an array, got ${describe(value)}`);
    if (value.length > maxLength) throw new MessageInvalidError(path, `has more than ${maxLength} items`);
    return value.map((v, i) => item.parse(v, `${path}[${i}]`));
  });
}

/** `undefined` (or absent), or what `inner` accepts. */
export function optional<T>(inner: Schema<T>): Schema<T | undefined> {
  return schema((value, path) => (value === undefined ? undefined : inner.parse(value, path)));
}

/** `null`, or what `inner` accepts. */
export function nullable<T>(inner: Schema<T>): Schema<T | null> {
  return schema((value, path) => (value === null ? null : inner.parse(value, path)));
}

type Shape = Record<string, Schema<unknown>>;
type Parsed<S extends Shape> = { -readonly [K in keyof S]: S[K] extends Schema<infer T> ? T : never };

/**
 * A plain object with exactly these fields checked; fields it does not list are left out of the
 * result (a newer peer may send more), absent optional fields stay absent.
 */
export function object<S extends Shape>(shape: S): Schema<Parsed<S>> {
  const keys = Object.keys(shape);
  return schema((value, path) => {
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw new MessageInvalidError(path, `must be an object, got ${describe(value)}`);
    }
    const source = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const key of keys) {
      const parsed = (shape[key] as Schema<unknown>).parse(source[key], path ? `${path}.${key}` : key);
      if (parsed !== undefined) out[key] = parsed;
    }
    return out as Parsed<S>;
  });
}

/** A union discriminated on `key` (default `type`): the variant that value names checks the rest. */
export function variants<T>(byType: Readonly<Record<string, Schema<T>>>, key = "type"): Schema<T> {
  return schema((value, path) => {
    const type = (value as Record<string, unknown> | null)?.[key];
    const variant = typeof type === "string" && Object.hasOwn(byType, type) ? byType[type] : undefined;
    if (!variant)
      throw new MessageInvalidError(path ? `${path}.${key}` : key, `must be one of ${Object.keys(byType).join(", ")}`);
    return variant.parse(value, path);
  });
}

/** A JSON value (for opaque fields such as a user's JSON schema), bounded in depth. */
export function jsonValue(maxDepth = 64): Schema<unknown> {
  const check = (value: unknown, path: string, depth: number): unknown => {
    if (depth > maxDepth) throw new MessageInvalidError(path, `is nested deeper than ${maxDepth}`);
    if (value === null || typeof value === "string" || typeof value === "boolean") return value;
    if (typeof value === "number") {
      if (!Number.isFinite(value)) throw new MessageInvalidError(path, "must be a finite number");
      return value;
    }
    if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) check(v, `${path}[${i}]`, depth + 1);
      return value;
    }
    if (typeof value === "object") {
      for (const [k, v] of Object.entries(value)) check(v, `${path}.${k}`, depth + 1);
      return value;
    }
    throw new MessageInvalidError(path, `must be JSON, got ${describe(value)}`);
  };
  return schema((value, path) => check(value, path, 0));
}
