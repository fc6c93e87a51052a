import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { createServer, get, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
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

test("the corked events that end a stream go out even when they fill the socket's buffer", async () => {
  // Regression: a write after cork() that filled the buffer waited for a drain that a corked socket
  // never emits, so a chat stream whose last events crossed 16 KiB hung with nothing sent.
  const server = createServer(async (_req, res) => {
    const sse = new SseWriter(res, {});
    sse.cork();
    for (let i = 0; i < 100; i++) await sse.send({ text: "x".repeat(240) });
    await sse.done();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const body = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no complete response within 5 s")), 5000);
      get(`http://127.0.0.1:${port}/`, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => {
          clearTimeout(timer);
          resolve(text);
        });
      }).on("error", reject);
    });
    assert.equal(body.split("\n\n").filter((e) => e.startsWith("data: {")).length, 100);
    assert.ok(body.endsWith("data: [DONE]\n\n"));
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
