import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PrometheusMeter } from "../../observability/index.js";
import { MeterHistory, parseExposition } from "./meter-history.js";

describe("parseExposition", () => {
  it("reads prom-client's text: names with prefixes, labels unescaped, histogram series", async () => {
    const meter = new PrometheusMeter();
    meter.counter("kv_transfer_bytes_total", "bytes", ["backend"]).inc({ backend: 'say "hi"\\' }, 3);
    meter.histogram("kv_transfer_latency_seconds", "latency", ["backend"], [0.5]).observe({ backend: "tcp" }, 0.25);
    meter.counter("frontend_requests_total", "not asked for").inc();
    const series = parseExposition(await meter.render(), ["armature_kv_transfer_"]);
    assert.deepEqual(series, [
      { name: "armature_kv_transfer_bytes_total", labels: { backend: 'say "hi"\\' }, value: 3 },
      { name: "armature_kv_transfer_latency_seconds_bucket", labels: { le: "0.5", backend: "tcp" }, value: 1 },
      { name: "armature_kv_transfer_latency_seconds_bucket", labels: { le: "+Inf", backend: "tcp" }, value: 1 },
      { name: "armature_kv_transfer_latency_seconds_sum", labels: { backend: "tcp" }, value: 0.25 },
      { name: "armature_kv_transfer_latency_seconds_count", labels: { backend: "tcp" }, value: 1 },
    ]);
  });
});

describe("MeterHistory", () => {
  it("turns a counter into a per-second rate between its oldest and newest reads, by label", async () => {
    const meter = new PrometheusMeter();
    const bytes = meter.counter("kv_transfer_bytes_total", "bytes", ["backend"]);
    const clock = { now: 0 };
    const history = new MeterHistory({ meter, prefixes: ["armature_kv_"], now: () => clock.now });
    bytes.inc({ backend: "tcp" }, 100);
    await history.read();
    assert.equal(history.rate("armature_kv_transfer_bytes_total", "backend"), null, "one read has no rate");
    clock.now = 10_000;
    bytes.inc({ backend: "tcp" }, 50);
    bytes.inc({ backend: "nixl" }, 20);
    await history.read();
    // A read within a second of the last one is skipped: this increase is not seen yet.
    clock.now = 10_500;
    bytes.inc({ backend: "tcp" }, 1_000);
    await history.read();
    assert.deepEqual(history.rate("armature_kv_transfer_bytes_total", "backend"), { tcp: 5, nixl: 2 });
    assert.deepEqual(history.rate("armature_kv_transfer_bytes_total"), { "": 7 });
    assert.deepEqual(history.latest("armature_kv_transfer_bytes_total", "backend"), { tcp: 150, nixl: 20 });
  });

  it("looks back only as far as asked", async () => {
    const meter = new PrometheusMeter();
    const blocks = meter.counter("kv_blocks_total", "blocks");
    const clock = { now: 0 };
    const history = new MeterHistory({ meter, prefixes: ["armature_kv_"], now: () => clock.now });
    for (const [at, add] of [
      [0, 0],
      [50_000, 100],
      [70_000, 40],
      [90_000, 20],
    ] as const) {
      clock.now = at;
      blocks.inc({}, add);
      await history.read();
    }
    // The last 30 s: from the read at 70 s (value 140) to the one at 90 s (160).
    assert.deepEqual(history.rate("armature_kv_blocks_total", undefined, 30_000), { "": 1 });
  });
});
