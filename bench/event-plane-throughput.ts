// KV events per second through the NATS event plane into a router's KV index: publisher
// processes (one per simulated worker) send batches as fast as NATS takes them; this process
// decodes and applies them. Usage: node --import tsx bench/event-plane-throughput.ts [seconds]
import { spawn } from "node:child_process";
import { connect } from "@nats-io/transport-node";
import { silentLogger } from "../src/observability/index.js";
import type { KvEventBatch } from "../src/protocol/index.js";
import { KvIndexer } from "../src/router/index.js";
import { NatsEventPlane } from "../src/runtime/nats/index.js";
import { startNatsServer } from "../test/helpers/nats-server.js";
import { machine } from "./load/processes.js";

const seconds = Number(process.argv[2] ?? 8);
console.log(`KV events through NATS — ${machine()}, nats-server 2.9, ${seconds}s per run\n`);
console.log("| publishers | blocks per batch | batches/s received | blocks/s applied | received / sent | gaps seen |");
console.log("|---:|---:|---:|---:|---:|---:|");
const nats = await startNatsServer();
try {
  for (const [publishers, perBatch] of [
    [1, 1],
    [1, 16],
    [4, 16],
  ] as const) {
    const nc = await connect({ servers: new URL(nats.url).host });
    const events = new NatsEventPlane(nc);
    const indexer = new KvIndexer({ logger: silentLogger, blockSize: 16 });
    let batches = 0;
    let gaps = 0;
    const last = new Map<string, number>();
    let first = 0;
    let lastAt = 0;
    events.subscribe("armature.kv_events.*", (payload) => {
      const batch = payload as KvEventBatch;
      if (first === 0) first = performance.now();
      lastAt = performance.now();
      if (batch.eventId !== (last.get(batch.workerId) ?? 0) + 1) gaps++;
      last.set(batch.workerId, batch.eventId);
      indexer.apply(batch);
      batches++;
    });
    await nc.flush();
    const children = Array.from({ length: publishers }, (_, i) =>
      spawn(
        process.execPath,
        ["--import", "tsx", "bench/load/kv-event-publisher.ts", nats.url, `w${i}`, String(seconds), String(perBatch)],
        {
          stdio: ["ignore", "pipe", "inherit"],
        },
      ),
    );
    const sent = await Promise.all(
      children.map(
        (child) =>
          new Promise<number>((resolve) => {
            let out = "";
            child.stdout?.on("data", (d: Buffer) => {
              out += d.toString();
            });
            child.once("exit", () => resolve((JSON.parse(out) as { batches: number }).batches));
          }),
      ),
    );
    // Let the subscriber drain what NATS still holds for it.
    for (let seen = -1; seen !== batches; ) {
      seen = batches;
      await new Promise((r) => setTimeout(r, 500));
    }
    const elapsed = (lastAt - first) / 1000;
    const total = sent.reduce((a, b) => a + b, 0);
    console.log(
      `| ${publishers} | ${perBatch} | ${(batches / elapsed).toFixed(0)} | ${((batches * perBatch) / elapsed).toFixed(0)} | ${((100 * batches) / total).toFixed(1)}% | ${gaps} |`,
    );
    indexer.close();
    await nc.drain();
  }
} finally {
  await nats.stop();
}
