/**
 * The end (exclusive) of the JSON value that starts at `text[start]` (an object or array; the
 * scan follows brackets and strings), or -1 when the text ends before the value does.
 */
export function jsonValueEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** `JSON.parse`, or undefined for text that is not JSON. */
export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * A call from a parsed `{"name": …, "arguments"|"parameters": …}` object, or undefined when it is
 * not one. Arguments a model wrote as a JSON string holding an object are taken as that object, so
 * they are never encoded twice (vLLM's hermes tests pin this).
 */
export function callFromObject(value: unknown): { name: string; arguments: string } | undefined {
  if (!isObject(value) || typeof value.name !== "string") return undefined;
  let args = Object.hasOwn(value, "arguments") ? value.arguments : value.parameters;
  if (args === undefined) return undefined;
  if (typeof args === "string") {
    const inner = tryParseJson(args);
    if (isObject(inner)) args = inner;
  }
  return { name: value.name, arguments: JSON.stringify(args) };
}

/** How many characters at the end of `text` are a proper prefix of one of `markers`. */
export function markerPrefixLength(text: string, markers: readonly string[]): number {
  let longest = 0;
  for (const marker of markers) {
    for (let n = Math.min(marker.length - 1, text.length); n > longest; n--) {
      if (text.endsWith(marker.slice(0, n))) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}
