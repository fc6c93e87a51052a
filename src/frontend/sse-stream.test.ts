import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { silentLogger } from "../observability/index.js";
import { type Delivery, deliver, iterate, type StreamSink } from "../runtime/index.js";
import type { Generation, GenerationEnd, GenerationEvent } from "./generation.js";
import { type StreamShape, streamGeneration } from "./sse-stream.js";
import { SseWriter } from "./sse-writer.js";

const end: GenerationEnd = {
  type: "end",
  finishReason: "stop",
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } },
};

function generationOf(events: readonly GenerationEvent[], failAfter?: number): Generation {
  async function* source(): AsyncGenerator<GenerationEvent> {
    for (const [i, event] of events.entries()) {
      if (i === failAfter) throw new Error("the worker went away");
      yield event;
    }
  }
  const open = (sink: StreamSink<GenerationEvent>): Delivery => deliver(source(), sink);
  return { workerId: "w", prefillWorkerId: undefined, overlapBlocks: undefined, promptTokens: 3, open, events: iterate(open) };
}

/** Streams `generation` through `shape` from a real HTTP server; the body the client read, what the driver returned, and what was logged. */
async function served(generation: Generation, shape: StreamShape) {
  const errors: string[] = [];
  const log = { ...silentLogger, error: (_: unknown, message?: string) => errors.push(String(message)) } as typeof silentLogger;
  let result: Promise<GenerationEnd | undefined> | undefined;
  const server = createServer((_req, res) => {
    result = streamGeneration(generation, new SseWriter(res, {}), shape, log);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const body = await response.text();
    return { body, type: response.headers.get("content-type"), returned: await result, errors };
  } finally {
    server.close();
  }
}

const texts: GenerationEvent[] = [{ type: "text", text: "Hel" }, { type: "text", text: "" }, { type: "text", text: "lo" }, end];

const openaiLike: StreamShape = {
  named: false,
  doneMarker: true,
  start: () => [{ role: "assistant" }],
  text: (event) => (event.text === "" ? [] : [{ delta: event.text }]),
  end: (e) => [{ finish: e.finishReason }, { usage: e.usage.total_tokens }],
  error: (http) => [{ error: http.body.error.message }],
};

test("a data-only stream: start, one event per piece of text, the closing events, then [DONE]", async () => {
  const { body, type, returned, errors } = await served(generationOf(texts), openaiLike);
  assert.equal(type, "text/event-stream");
  assert.equal(
    body,
    'data: {"role":"assistant"}\n\ndata: {"delta":"Hel"}\n\ndata: {"delta":"lo"}\n\n' +
      'data: {"finish":"stop"}\n\ndata: {"usage":5}\n\ndata: [DONE]\n\n',
  );
  assert.deepEqual([returned, errors], [end, []]);
});

test("named events carry their type as the event name and end without [DONE]", async () => {
  const shape: StreamShape = {
    named: true,
    doneMarker: false,
    start: () => [{ type: "message_start" }],
    text: (event) => [{ type: "delta", text: event.text }],
    end: () => [{ type: "message_stop" }],
    error: () => [{ type: "error" }],
  };
  const { body } = await served(generationOf([{ type: "text", text: "a" }, end]), shape);
  assert.equal(
    body,
    'event: message_start\ndata: {"type":"message_start"}\n\n' +
      'event: delta\ndata: {"type":"delta","text":"a"}\n\n' +
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  );
});

test("a failure after the stream began is logged and sent as the shape's error event (its details kept in the log), and the stream ends", async () => {
  const { body, returned, errors } = await served(generationOf(texts, 2), openaiLike);
  assert.equal(
    body,
    'data: {"role":"assistant"}\n\ndata: {"delta":"Hel"}\n\ndata: {"error":"internal error; the server log has the details"}\n\ndata: [DONE]\n\n',
  );
  assert.equal(returned, undefined, "no end: the generation did not finish");
  assert.deepEqual(errors, ["stream failed after it started"]);
});

test("while the socket's buffer is full every event still goes, in order, each after the drain", async () => {
  // A response whose every write fills the buffer: the driver waits for each drain.
  const written: string[] = [];
  const res = Object.assign(new EventEmitter(), {
    destroyed: false,
    writableEnded: false,
    writeHead: () => res,
    write(chunk: string) {
      written.push(chunk);
      queueMicrotask(() => res.emit("drain"));
      return false;
    },
    cork: () => undefined,
    end(chunk?: string) {
      if (chunk) written.push(chunk);
      res.writableEnded = true;
    },
  });
  const returned = await streamGeneration(
    generationOf(texts),
    new SseWriter(res as unknown as ServerResponse, {}),
    openaiLike,
    silentLogger,
  );
  assert.equal(returned, end);
  assert.equal(
    written.join(""),
    'data: {"role":"assistant"}\n\ndata: {"delta":"Hel"}\n\ndata: {"delta":"lo"}\n\n' +
      'data: {"finish":"stop"}\n\ndata: {"usage":5}\n\ndata: [DONE]\n\n',
  );
});
