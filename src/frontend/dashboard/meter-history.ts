import type { MetricMeter } from "../../observability/index.js";

/** One series of a scrape: its name (with a histogram's suffix), labels and value. */
export interface ScrapedSeries {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SERIES_LINE = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * The series of a Prometheus text exposition whose names start with one of `prefixes` (comments
 * and other names skipped; label values unescaped).
 */
export function parseExposition(text: string, prefixes: readonly string[]): ScrapedSeries[] {
  const found: ScrapedSeries[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#") || !prefixes.some((p) => line.startsWith(p))) continue;
    const match = SERIES_LINE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? "").matchAll(LABEL)) {
      labels[label[1] as string] = (label[2] as string).replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    }
    found.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return found;
}

interface Snapshot {
  readonly atMs: number;
  readonly series: readonly ScrapedSeries[];
}

export interface MeterHistoryOptions {
  readonly meter: MetricMeter;
  /** Series names read (each a prefix of the full name, e.g. `armature_kv_transfer_`). */
  readonly prefixes: readonly string[];
  /** Milliseconds since the epoch. Default `Date.now`. */
  readonly now?: () => number;
  /** A read within this long of the last reuses it. Default 1 s. */
  readonly minIntervalMs?: number;
  /** Reads kept. Default 5 min. */
  readonly spanMs?: number;
}

/**
 * Reads of some of the process's own metrics, kept a few minutes so that counters become rates:
 * what `rate()` in Prometheus would say, without one. Reads happen when asked (the dashboard's
 * polls), at most once a `minIntervalMs`.
 */
export class MeterHistory {
  readonly #o: MeterHistoryOptions;
  readonly #now: () => number;
  readonly #snapshots: Snapshot[] = [];

  constructor(options: MeterHistoryOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Reads the meter now (unless it was just read) and drops reads older than the span. */
  async read(): Promise<void> {
    const now = this.#now();
    const last = this.#snapshots.at(-1);
    if (last && now - last.atMs < (this.#o.minIntervalMs ?? 1_000)) return;
    const series = parseExposition(await this.#o.meter.render(), this.#o.prefixes);
    this.#snapshots.push({ atMs: now, series });
    const span = this.#o.spanMs ?? 300_000;
    while (this.#snapshots.length > 2 && (this.#snapshots[0] as Snapshot).atMs < now - span) this.#snapshots.shift();
  }

  /** The latest value of each series named `name`, summed by the value of label `by` ("" without). */
  latest(name: string, by?: string): Record<string, number> {
    return sumBy(this.#snapshots.at(-1)?.series ?? [], name, by);
  }

  /**
   * Per-second increase of counter `name` over the last `lastMs` (or as far back as the reads go),
   * summed by label `by`; null before two reads.
   */
  rate(name: string, by?: string, lastMs = 60_000): Record<string, number> | null {
    const newest = this.#snapshots.at(-1);
    const oldest = this.#snapshots.find((s) => s.atMs >= (newest?.atMs ?? 0) - lastMs);
    if (!newest || !oldest || oldest === newest) return null;
    const before = sumBy(oldest.series, name, by);
    const after = sumBy(newest.series, name, by);
    const seconds = (newest.atMs - oldest.atMs) / 1000;
    const rates: Record<string, number> = {};
    for (const [key, value] of Object.entries(after)) rates[key] = Math.max(0, value - (before[key] ?? 0)) / seconds;
    return rates;
  }
}

function sumBy(series: readonly ScrapedSeries[], name: string, by: string | undefined): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const s of series) {
    if (s.name !== name || !Number.isFinite(s.value)) continue;
    const key = by === undefined ? "" : (s.labels[by] ?? "");
    sums[key] = (sums[key] ?? 0) + s.value;
  }
  return sums;
}
