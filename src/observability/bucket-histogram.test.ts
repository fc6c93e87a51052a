import assert from "node:assert/strict";
import { test } from "node:test";
import { Histogram, type Metric, Registry } from "prom-client";
import { BucketHistogram } from "./bucket-histogram.js";

// prom-client's own Histogram is the reference: the same observations must read the same.
const buckets = [0.005, 0.01, 0.1, 1, 10];
const observations: [Record<string, string>, number][] = [
  [{ model: "a" }, 0.005], // on a bound: counts in that bucket (le is "less or equal")
  [{ model: "a" }, 0.0051],
  [{ model: "a" }, 0],
  [{ model: "a" }, -3],
  [{ model: "a" }, 250], // past every bound: +Inf only
  [{ model: 'quote " and \\ backslash\nnewline' }, 0.5],
  [{ model: "b", endpoint: "chat" }, 2.5],
  [{ model: "b", endpoint: "chat" }, 0.09],
  [{ endpoint: "chat", model: "b" }, 0.01],
];

function twoRegistries(): { reference: Registry; ours: Registry; histogram: BucketHistogram } {
  const reference = new Registry();
  const referenceHistogram = new Histogram({
    name: "x_seconds",
    help: "Latency.",
    labelNames: ["model", "endpoint"],
    buckets,
    registers: [reference],
  });
  const ours = new Registry();
  const histogram = new BucketHistogram({ name: "x_seconds", help: "Latency.", labelNames: ["model", "endpoint"], buckets });
  ours.registerMetric(histogram as unknown as Metric);
  for (const [labels, value] of observations) {
    referenceHistogram.observe(labels, value);
    histogram.observe(labels, value);
  }
  return { reference, ours, histogram };
}

test("a bucket histogram's text exposition is prom-client's for the same observations", async () => {
  const { reference, ours } = twoRegistries();
  assert.equal(await ours.metrics(), await reference.metrics());
});

test("a bucket histogram's JSON is prom-client's for the same observations", async () => {
  const { reference, ours } = twoRegistries();
  assert.deepEqual(await ours.getMetricsAsJSON(), await reference.getMetricsAsJSON());
});

test("a bound series observes like observe(labels), and reset empties the histogram", async () => {
  const { reference, ours, histogram } = twoRegistries();
  const referenceHistogram = reference.getSingleMetric("x_seconds") as Histogram;
  const bound = histogram.series({ model: "a" });
  for (const value of [0.2, 0.002, 7]) {
    bound.observe(value);
    referenceHistogram.observe({ model: "a" }, value);
  }
  assert.equal(await ours.metrics(), await reference.metrics());
  histogram.reset();
  assert.equal(await ours.metrics(), "# HELP x_seconds Latency.\n# TYPE x_seconds histogram\n");
});

test("a label the histogram does not declare, and a value that is not finite, are refused", () => {
  const histogram = new BucketHistogram({ name: "x", help: "x", labelNames: ["model"], buckets });
  assert.throws(() => histogram.observe({ modle: "a" }, 1), /modle/);
  assert.throws(() => histogram.observe({ model: "a" }, Number.NaN), /not a valid number/);
  assert.throws(() => histogram.observe({ model: "a" }, Number.POSITIVE_INFINITY), /not a valid number/);
});
