type Labels = Record<string, string | number>;

/** One label set's counts: an observation costs a bucket search and three additions. */
class Series {
  readonly labels: Labels;
  /** Observations per bucket, the last one past every bound (`+Inf`). */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  readonly #bounds: readonly number[];

  constructor(labels: Labels, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }
}

interface ValuePair {
  readonly labels: Labels;
  readonly sharedLabels?: Labels;
  readonly value: number;
  readonly metricName: string;
  readonly exemplar?: null | undefined;
}

/**
 * A Prometheus histogram that a prom-client `Registry` exposes like its own (`registerMetric`),
 * with the same text, but whose per-label-set observer is resolved once: observing costs no label
 * validation, hashing or allocation (prom-client's bound children still do all three on every call,
 * which a per-token histogram pays per token).
 */
export class BucketHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #bounds: readonly number[];
  readonly #labelNames: readonly string[];
  readonly #series = new Map<string, Series>();

  constructor(options: { name: string; help: string; labelNames: readonly string[]; buckets: readonly number[] }) {
    this.name = options.name;
    this.help = options.help;
    this.#labelNames = options.labelNames;
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
  }

  observe(labels: Labels, value: number): void {
    this.series(labels).observe(value);
  }

  /** The label set's series, made on first use (a label the histogram does not declare throws). */
  series(labels: Labels): Series {
    const key = this.#labelNames.map((name) => String(labels[name] ?? "")).join("\u0000");
    let series = this.#series.get(key);
    if (!series) {
      for (const name of Object.keys(labels)) {
        if (!this.#labelNames.includes(name)) {
          throw new Error(`Added label "${name}" is not included in initial labelset: ${JSON.stringify(this.#labelNames)}`);
        }
      }
      series = new Series({ ...labels }, this.#bounds);
      this.#series.set(key, series);
    }
    return series;
  }

  reset(): void {
    this.#series.clear();
  }

  /** What the registry's text exposition reads: buckets cumulative, then `+Inf`, sum and count per label set. */
  async getForPromString(): Promise<{ name: string; help: string; type: string; values: ValuePair[]; aggregator: string }> {
    const values: ValuePair[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const series of this.#series.values()) {
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += series.counts[i] as number;
        values.push({ labels: { le: bound }, sharedLabels: series.labels, value: cumulative, metricName: bucketName });
      });
      values.push({ labels: { le: "+Inf" }, sharedLabels: series.labels, value: series.count, metricName: bucketName });
      values.push({ labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The same values with each one's labels in one object (the registry's JSON form). */
  async get(): Promise<{ name: string; help: string; type: string; values: ValuePair[]; aggregator: string }> {
    const data = await this.getForPromString();
    return {
      ...data,
      // As prom-client's: a bucket's `le` first, and its (absent) exemplar null; sum and count have none.
      values: data.values.map(({ labels, sharedLabels, value, metricName }) => ({
        value,
        metricName,
        exemplar: "le" in labels ? null : undefined,
        labels: { ...labels, ...sharedLabels },
      })),
    };
  }
}
