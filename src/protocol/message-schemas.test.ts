import assert from "node:assert/strict";
import { test } from "node:test";
import {
  generateRequestSchema,
  generateResponseSchema,
  kvEventBatchSchema,
  MessageInvalidError,
  modelCardSchema,
  wireTraceContextSchema,
  workerLoadSchema,
} from "./index.js";

const request = {
  type: "generate-request",
  requestId: "r-1",
  model: "m",
  tokenIds: [1, 2, 3],
  sampling: { temperature: 0.7, topP: 0.9, seed: 42 },
  maxTokens: 16,
  constraint: { type: "json_schema", schema: { type: "object", properties: { a: { type: "string" } } } },
};

test("well-formed messages pass unchanged", () => {
  assert.deepEqual(generateRequestSchema.parse(request), request);
  const batch = {
    type: "kv-event-batch",
    workerId: "worker-1a2b",
    eventId: 7,
    events: [
      { type: "kv-block-stored", parentHash: null, blocks: [{ blockHash: 1n, tokensHash: 2n }], blockSize: 16 },
      { type: "kv-block-removed", blockHashes: [1n], storageTier: "host_pinned" },
      { type: "kv-cache-cleared" },
    ],
  };
  assert.deepEqual(kvEventBatchSchema.parse(batch), batch);
  const end = { type: "request-end", finishReason: "length", promptTokens: 3, completionTokens: 16, cachedTokens: 0 };
  assert.deepEqual(generateResponseSchema.parse(end), end);
});

test("a handoff of the prompt's state from token k on, and what asks for it, keep their fields", () => {
  const prefill = { ...request, disaggregation: { phase: "prefill", decodeHeldTokens: 32 } };
  assert.deepEqual(generateRequestSchema.parse(prefill), prefill);
  const handoff = {
    id: "h-1",
    prefillWorkerId: "worker-1",
    format: "llamacpp-sequence-state",
    descriptors: [{ agent: "a", region: "kv-h-1", offset: 0, length: 4200, medium: "file", path: "/dev/shm/x" }],
    bytes: 4200,
    agent: "a",
    promptTokens: 40,
    fromToken: 32,
    wholeBytes: 31_000,
    firstToken: 7,
    cachedTokens: 0,
    expiresInMs: 30_000,
  };
  const decode = { ...request, disaggregation: { phase: "decode", handoff } };
  assert.deepEqual(generateRequestSchema.parse(decode), decode);
  const end = {
    type: "request-end",
    finishReason: "length",
    promptTokens: 40,
    completionTokens: 16,
    cachedTokens: 40,
    kvTransfer: { backend: "shm", bytes: 4200, ms: 0.5, savedBytes: 26_800 },
  };
  assert.deepEqual(generateResponseSchema.parse(end), end);
  assert.throws(
    () => generateRequestSchema.parse({ ...request, disaggregation: { phase: "prefill", decodeHeldTokens: -16 } }),
    /disaggregation\.decodeHeldTokens must be in 0\.\./,
  );
});

test("the sampling surface's fields and a token delta's log-probabilities keep their fields", () => {
  const asking = {
    ...request,
    sampling: { temperature: 0, logitBias: [{ token: 5, bias: -100 }] },
    logprobs: { top: 3 },
    minTokens: 4,
    stopTokenIds: [2, 9],
  };
  assert.deepEqual(generateRequestSchema.parse(asking), asking);
  const delta = {
    type: "token-delta",
    tokenIds: [7],
    logprobs: [
      {
        logprob: -0.25,
        top: [
          { token: 7, logprob: -0.25 },
          { token: 3, logprob: -1.5 },
        ],
      },
    ],
  };
  assert.deepEqual(generateResponseSchema.parse(delta), delta);
  assert.throws(() => generateRequestSchema.parse({ ...request, logprobs: { top: 21 } }), /logprobs\.top must be in 0\.\.20/);
  assert.throws(
    () => generateRequestSchema.parse({ ...request, sampling: { temperature: 1, logitBias: [{ token: 1, bias: 101 }] } }),
    /sampling\.logitBias\[0\]\.bias must be/,
  );
  assert.throws(
    () => generateResponseSchema.parse({ ...delta, logprobs: [{ logprob: 0.5, top: [] }] }),
    /logprobs\[0\]\.logprob must be/,
    "a log-probability is never above 0",
  );
});

test("each malformed field is refused by its path", () => {
  const cases: [unknown, RegExp][] = [
    [{ ...request, tokenIds: "1,2,3" }, /^tokenIds must be an array/],
    [{ ...request, tokenIds: [1, -2] }, /^tokenIds\[1\] must be in 0\.\./],
    [{ ...request, tokenIds: [1, 2.5] }, /^tokenIds\[1\] must be an integer/],
    [{ ...request, maxTokens: "16" }, /^maxTokens must be an integer/],
    [{ ...request, sampling: { temperature: Number.NaN } }, /^sampling\.temperature must be a finite number/],
    [{ ...request, requestId: "x".repeat(300) }, /^requestId is longer than 256/],
    [{ ...request, disaggregation: { phase: "both" } }, /^disaggregation\.phase must be one of prefill, decode/],
    [{ ...request, type: "generate" }, /^type must be one of generate-request/],
    [null, /^message must be an object, got null/],
  ];
  for (const [value, message] of cases) {
    assert.throws(
      () => generateRequestSchema.parse(value),
      (e: unknown) => e instanceof MessageInvalidError && message.test(e.message),
    );
  }
  assert.throws(
    () => kvEventBatchSchema.parse({ type: "kv-event-batch", workerId: "w.1", eventId: 1, events: [] }),
    /workerId does not match/,
    "a dot would add a token to the worker's NATS subjects",
  );
  assert.throws(
    () =>
      kvEventBatchSchema.parse({
        type: "kv-event-batch",
        workerId: "w",
        eventId: 1,
        events: [
          { type: "kv-block-stored", parentHash: null, blocks: [{ blockHash: 1n << 64n, tokensHash: 0n }], blockSize: 16 },
        ],
      }),
    /events\[0\]\.blocks\[0\]\.blockHash must be a u64/,
  );
  assert.throws(
    () =>
      workerLoadSchema.parse({ type: "worker-load", workerId: "w", activeRequests: 1, waitingRequests: 0, activeKvBlocks: 1 }),
    /totalKvBlocks must be an integer, got undefined/,
  );
  const load = { type: "worker-load", workerId: "w", activeRequests: 1, waitingRequests: 0, activeKvBlocks: 1, totalKvBlocks: 8 };
  assert.equal(workerLoadSchema.parse({ ...load, kvEventId: 7 }).kvEventId, 7);
  assert.throws(() => workerLoadSchema.parse({ ...load, kvEventId: -1 }), /kvEventId/);
  assert.throws(() => workerLoadSchema.parse({ ...load, kvEventId: "7" }), /kvEventId/);
});

test("a user's JSON schema is kept whole but bounded in depth", () => {
  let deep: unknown = {};
  for (let i = 0; i < 100; i++) deep = { properties: { x: deep } };
  assert.throws(
    () => generateRequestSchema.parse({ ...request, constraint: { type: "json_schema", schema: deep } }),
    /nested deeper than 64/,
  );
});

test("fields a newer peer adds are left out, absent optional fields stay absent", () => {
  const card = modelCardSchema.parse({
    name: "m",
    role: "aggregated",
    engine: "mocker",
    blockSize: 64,
    totalKvBlocks: 16384,
    maxBatchedTokens: 8192,
    maxSequences: 256,
    contextLength: 32768,
    tokenizer: { kind: "bytes" },
    eosTokenIds: [0],
    publishesKvEvents: true,
    futureField: 1,
  });
  assert.equal("futureField" in card, false);
  assert.equal("chatTemplate" in card, false);
});

test("a trace context is kept; a malformed one is dropped without costing the request", () => {
  const traceContext = {
    traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    tracestate: "congo=t61rcWkgMzE",
  };
  assert.deepEqual(generateRequestSchema.parse({ ...request, traceContext }), { ...request, traceContext });
  const malformed = [
    { traceparent: "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01" },
    { traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01" },
    { traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
    { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "x".repeat(513) },
    { traceparent: 7 },
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  ];
  for (const value of malformed) {
    assert.deepEqual(generateRequestSchema.parse({ ...request, traceContext: value }), request, JSON.stringify(value));
    assert.throws(() => wireTraceContextSchema.parse(value));
  }
});
