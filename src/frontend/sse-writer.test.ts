import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { test } from "node:test";
import { SseWriter } from "./sse-writer.js";

/** A response whose socket buffer is always full: every write waits for `drain`. */
class FullSocketResponse extends EventEmitter {
  destroyed = false;
  writableEnded = false;
  written: string[] = [];
  writeHead(): this {
    return this;
  }
  write(chunk: string): boolean {
    this.written.push(chunk);
    queueMicrotask(() => this.emit("drain"));
    return false;
  }
}

test("waiting for drain leaves no listener behind, however many times the buffer fills", async () => {
  // Regression: each backpressure wait left a 'close' listener (and a 'drain' one once closed) on the response.
  const res = new FullSocketResponse();
  const sse = new SseWriter(res as unknown as ServerResponse, {});
  const before = [res.listenerCount("close"), res.listenerCount("drain")];
  for (let i = 0; i < 50; i++) await sse.send({ i });
  assert.deepEqual([res.listenerCount("close"), res.listenerCount("drain")], before);
  assert.equal(res.written.length, 50);
});

test("a client that goes away while the buffer is full releases the writer", async () => {
  const res = new FullSocketResponse();
  res.write = (chunk: string) => {
    res.written.push(chunk);
    return false; // never drains
  };
  const sse = new SseWriter(res as unknown as ServerResponse, {});
  const sending = sse.send("x");
  res.destroyed = true;
  res.emit("close");
  await sending;
  assert.equal(sse.closed, true);
  assert.deepEqual([res.listenerCount("close"), res.listenerCount("drain")], [0, 0]);
});
