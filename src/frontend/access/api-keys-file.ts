import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { ArmatureError, PRIORITY_LIMIT } from "../../protocol/index.js";

/** One API key and what it may do. Absent limits are unlimited; absent `models` allows every model. */
export interface ApiKeySpec {
  /** The secret clients send. Never logged, never a metric label. */
  readonly key: string;
  /** What logs and metrics call the key (`key_name`). */
  readonly name: string;
  readonly requestsPerMinute?: number | undefined;
  /** Prompt plus completion tokens, counted from each response's usage when it ends. */
  readonly tokensPerMinute?: number | undefined;
  /** Requests of this key in flight at once. */
  readonly maxConcurrent?: number | undefined;
  /** Served model names this key may use. */
  readonly models?: readonly string[] | undefined;
  /** The priority of requests that name none (lower runs earlier). Absent: 0. */
  readonly defaultPriority?: number | undefined;
  /** The most urgent (lowest) priority a request may ask for; one asking for less is refused. */
  readonly priorityCeiling?: number | undefined;
}

const FIELDS = [
  "key",
  "name",
  "requests_per_minute",
  "tokens_per_minute",
  "max_concurrent",
  "models",
  "default_priority",
  "priority_ceiling",
] as const;
const LIMITS = [
  ["requests_per_minute", "requestsPerMinute"],
  ["tokens_per_minute", "tokensPerMinute"],
  ["max_concurrent", "maxConcurrent"],
] as const;
/** Names become the `key_name` metric label: keep them short and label-safe. */
const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Parses a keys file: YAML or JSON (JSON is YAML), a list of
 * `{key, name, requests_per_minute?, tokens_per_minute?, max_concurrent?, models?, default_priority?,
 * priority_ceiling?}`.
 * Throws `CONFIG_INVALID` naming the file, the entry and the field at fault; the message never
 * contains a key.
 */
export function parseApiKeys(text: string, source: string): ApiKeySpec[] {
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    // The parser quotes the offending line, which may hold a key: report only where it is.
    const where = (error as { linePos?: { line: number }[] }).linePos?.[0]?.line;
    throw invalid(source, `not valid YAML or JSON${where ? ` (line ${where})` : ""}`);
  }
  if (!Array.isArray(document)) {
    throw invalid(source, `the file must be a list of {${FIELDS.join(", ")}}`);
  }
  if (document.length === 0) throw invalid(source, "the list is empty; every request would be refused");
  const specs = document.map((entry, i) => parseEntry(entry, `entry ${i + 1}`, source));
  checkUnique(specs, (i) => `keys file ${source}: entry ${i + 1}`);
  return specs;
}

/**
 * The keys of `--api-key` / `ARMATURE_API_KEY` followed by those of the keys file, checked
 * together: a name or a key given twice is `CONFIG_INVALID`.
 */
export function joinKeyLists(flagKeys: readonly ApiKeySpec[], fileKeys: readonly ApiKeySpec[]): ApiKeySpec[] {
  const all = [...flagKeys, ...fileKeys];
  checkUnique(all, (i) => (i < flagKeys.length ? `--api-key number ${i + 1}` : `keys file entry ${i - flagKeys.length + 1}`));
  return all;
}

function checkUnique(specs: readonly ApiKeySpec[], label: (index: number) => string): void {
  const names = new Set<string>();
  const keys = new Set<string>();
  specs.forEach((spec, i) => {
    if (names.has(spec.name))
      throw new ArmatureError("CONFIG_INVALID", `${label(i)}: the name '${spec.name}' is used twice; names must be unique`);
    if (keys.has(spec.key))
      throw new ArmatureError("CONFIG_INVALID", `${label(i)} ('${spec.name}'): the same key is given twice`);
    names.add(spec.name);
    keys.add(spec.key);
  });
}

/** Reads and parses a keys file (see {@link parseApiKeys}). */
export function readApiKeysFile(path: string): ApiKeySpec[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (cause) {
    throw invalid(path, `cannot be read (${(cause as NodeJS.ErrnoException).code ?? "error"}); check --api-keys-file`, cause);
  }
  return parseApiKeys(text, path);
}

/** Keys given as `--api-key` / `ARMATURE_API_KEY`: unlimited, every model, named `api-key-1`, `api-key-2`, … */
export function apiKeysFromFlags(keys: readonly string[]): ApiKeySpec[] {
  return keys.map((key, i) => {
    if (!validKey(key)) {
      throw new ArmatureError("CONFIG_INVALID", `--api-key (ARMATURE_API_KEY) number ${i + 1} is empty or contains whitespace`);
    }
    return { key, name: `api-key-${i + 1}` };
  });
}

function parseEntry(entry: unknown, label: string, source: string): ApiKeySpec {
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
    throw invalid(source, `${label} must be a mapping with at least key and name`);
  }
  const fields = entry as Record<string, unknown>;
  const name = fields.name;
  if (typeof name !== "string" || !NAME.test(name)) {
    throw invalid(source, `${label}: name must be 1-64 letters, digits, '.', '_' or '-'`);
  }
  const where = `${label} ('${name}')`;
  const unknown = Object.keys(fields).filter((f) => !(FIELDS as readonly string[]).includes(f));
  if (unknown.length > 0) {
    throw invalid(source, `${where}: unknown field ${unknown.map((f) => `'${f}'`).join(", ")}; fields are ${FIELDS.join(", ")}`);
  }
  if (!validKey(fields.key)) throw invalid(source, `${where}: key must be a non-empty string without whitespace`);
  const limits: Record<string, number> = {};
  for (const [field, property] of LIMITS) {
    const value = fields[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
      throw invalid(source, `${where}: ${field} must be an integer ≥ 1 (leave it out for no limit)`);
    }
    limits[property] = value;
  }
  const models = fields.models;
  if (
    models !== undefined &&
    models !== null &&
    (!Array.isArray(models) || models.length === 0 || !models.every((m) => typeof m === "string" && m !== ""))
  ) {
    throw invalid(source, `${where}: models must be a non-empty list of model names (leave it out for every model)`);
  }
  const priorities = parsePriorities(fields, where, source);
  return {
    key: fields.key,
    name,
    ...limits,
    ...(Array.isArray(models) ? { models: [...(models as string[])] } : {}),
    ...priorities,
  };
}

/** `default_priority` and `priority_ceiling`: integers within ±PRIORITY_LIMIT, the default no more urgent than the ceiling. */
function parsePriorities(
  fields: Record<string, unknown>,
  where: string,
  source: string,
): { defaultPriority?: number; priorityCeiling?: number } {
  const out: { defaultPriority?: number; priorityCeiling?: number } = {};
  for (const [field, property] of [
    ["default_priority", "defaultPriority"],
    ["priority_ceiling", "priorityCeiling"],
  ] as const) {
    const value = fields[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== "number" || !Number.isInteger(value) || Math.abs(value) > PRIORITY_LIMIT) {
      throw invalid(
        source,
        `${where}: ${field} must be an integer between -${PRIORITY_LIMIT} and ${PRIORITY_LIMIT} (lower runs earlier)`,
      );
    }
    out[property] = value;
  }
  if (out.defaultPriority !== undefined && out.priorityCeiling !== undefined && out.defaultPriority < out.priorityCeiling) {
    throw invalid(
      source,
      `${where}: default_priority ${out.defaultPriority} is more urgent than priority_ceiling ${out.priorityCeiling}; lower runs earlier, so the default must be ≥ the ceiling`,
    );
  }
  return out;
}

function validKey(key: unknown): key is string {
  return typeof key === "string" && key.length > 0 && !/\s/.test(key);
}

function invalid(source: string, problem: string, cause?: unknown): ArmatureError {
  return new ArmatureError("CONFIG_INVALID", `keys file ${source}: ${problem}`, { cause });
}
