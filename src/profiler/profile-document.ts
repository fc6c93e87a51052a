import { type DecodePoint, PROFILE_VERSION, type PrefillPoint, parseProfile, type WorkerProfile } from "../planner/index.js";

/** A worker profile as written to disk: the format `parseProfile` reads (docs/planner.md). */
export interface ProfileDocument {
  readonly version: typeof PROFILE_VERSION;
  readonly description?: string;
  readonly prefill: readonly PrefillPoint[];
  readonly decode: readonly DecodePoint[];
}

/** Significant digits kept of each measured number: far below what repeated runs agree on. */
const SIGNIFICANT_DIGITS = 6;

/**
 * The profile as JSON text, one point per line (as in docs/planner.md), measured numbers rounded to
 * 6 significant digits. Checks the text with `parseProfile` (`source` names the file in its
 * messages) and throws its `CONFIG_INVALID` error rather than return a file the planner refuses.
 */
export function formatProfileJson(document: ProfileDocument, source: string): { text: string; profile: WorkerProfile } {
  const round = (value: number): number => Number(value.toPrecision(SIGNIFICANT_DIGITS));
  const prefill = document.prefill.map((p) =>
    JSON.stringify({
      inputTokens: p.inputTokens,
      ttftMs: round(p.ttftMs),
      tokensPerSecond: round(p.tokensPerSecond),
      ...(p.interleavedMs === undefined ? {} : { interleavedMs: round(p.interleavedMs) }),
    }),
  );
  const decode = document.decode.map((p) =>
    JSON.stringify({
      concurrency: p.concurrency,
      contextTokens: p.contextTokens,
      itlMs: round(p.itlMs),
      tokensPerSecond: round(p.tokensPerSecond),
      kvUsage: round(p.kvUsage),
    }),
  );
  const list = (lines: string[]): string => `[\n${lines.map((line) => `    ${line}`).join(",\n")}\n  ]`;
  const text = [
    "{",
    `  "version": ${PROFILE_VERSION},`,
    ...(document.description === undefined ? [] : [`  "description": ${JSON.stringify(document.description)},`]),
    `  "prefill": ${list(prefill)},`,
    `  "decode": ${list(decode)}`,
    "}",
    "",
  ].join("\n");
  return { text, profile: parseProfile(text, source) };
}
