/** Multipliers of the size suffixes a flag accepts (binary: 1 KiB = 1024 bytes; SI: 1 KB = 1000). */
const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
};

/**
 * A byte count written as a number with an optional unit: `1048576`, `512KiB`, `1.5 GiB`, `2GB`.
 * Units are case-insensitive. Returns undefined for anything else (the caller names its flag).
 */
export function parseByteSize(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!match) return undefined;
  const unit = UNITS[(match[2] ?? "").toLowerCase()];
  if (unit === undefined) return undefined;
  const bytes = Math.floor(Number(match[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
