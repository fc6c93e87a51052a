// Publishes KV event batches on NATS as fast as the connection takes them, for the event-plane
// benchmark: each batch stores `blocks` new blocks chained to the previous batch, as a worker
// filling its cache would. Usage: kv-event-publisher.ts NATS_URL WORKER_ID SECONDS BLOCKS_PER_BATCH
import { connect } from "@nats-io/transport-node";
import type { KvEventBatch } from "../../src/protocol/index.js";
import { NatsEventPlane } from "../../src/runtime/nats/index.js";

const [url, workerId, seconds, perBatch] = process.argv.slice(2) as [string, string, string, string];
const nc = await connect({ servers: new URL(url).host });
const events = new NatsEventPlane(nc);
const blocks = Number(perBatch);
const until = performance.now() + Number(seconds) * 1000;
let eventId = 0;
let hash = 1n;
let batches = 0;
while (performance.now() < until) {
  for (let k = 0; k < 64; k++) {
    const parent = hash;
    const stored = Array.from({ length: blocks }, () => {
      hash += 1n;
      return { blockHash: hash, tokensHash: hash * 7n };
    });
    const batch: KvEventBatch = {
      type: "kv-event-batch",
      workerId,
      eventId: ++eventId,
      events: [{ type: "kv-block-stored", parentHash: parent === 1n ? null : parent, blocks: stored, blockSize: 16 }],
    };
    await events.publish(`armature.kv_events.${workerId}`, batch);
    batches++;
  }
  await events.flush();
}
process.stdout.write(`${JSON.stringify({ batches, blocks: batches * blocks })}\n`);
await nc.drain();
