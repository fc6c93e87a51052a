import { ArmatureError } from "../../protocol/index.js";

/** Small typed readers over an untrusted JSON object; each throws a 400 naming the field. */
export type Body = Record<string, unknown>;

export function invalid(param: string, message: string): ArmatureError {
  return new ArmatureError("REQUEST_INVALID", message, { param });
}

export function asObject(value: unknown, param: string): Body {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw invalid(param, `${param === "body" ? "the request body" : `'${param}'`} must be a JSON object`);
  }
  return value as Body;
}

export function optionalNumber(
  body: Body,
  key: string,
  range: { min?: number; max?: number; integer?: boolean } = {},
): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) throw invalid(key, `'${key}' must be a number`);
  if (range.integer && !Number.isInteger(value)) throw invalid(key, `'${key}' must be an integer`);
  if (range.min !== undefined && value < range.min) throw invalid(key, `'${key}' must be at least ${range.min}, got ${value}`);
  if (range.max !== undefined && value > range.max) throw invalid(key, `'${key}' must be at most ${range.max}, got ${value}`);
  return value;
}

export function optionalBoolean(body: Body, key: string): boolean | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw invalid(key, `'${key}' must be a boolean`);
  return value;
}

export function requiredString(body: Body, key: string): string {
  const value = body[key];
  if (typeof value !== "string" || value === "") throw invalid(key, `'${key}' is required and must be a non-empty string`);
  return value;
}
