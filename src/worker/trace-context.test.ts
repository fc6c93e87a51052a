import assert from "node:assert/strict";
import { test } from "node:test";
import { MockerEngine } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import type { GenerateRequest, GenerateResponse } from "../protocol/index.js";
import { createEmbeddedRuntime } from "../runtime/index.js";
import { WorkerHost } from "./worker-host.js";

const request: GenerateRequest = {
  type: "generate-request",
  requestId: "r1",
  model: "m",
  tokenIds: [1, 2, 3, 4],
  sampling: { temperature: 0 },
  maxTokens: 3,
};

test("a malformed trace context is dropped and counted by the worker; the request is still served", async () => {
  const runtime = createEmbeddedRuntime();
  const worker = await WorkerHost.create({
    runtime,
    engine: new MockerEngine({ speedupRatio: 1000 }),
    id: "w1",
    modelName: "m",
    logger: silentLogger,
  });
  try {
    const serve = async (traceContext: unknown): Promise<GenerateResponse[]> => {
      const items: GenerateResponse[] = [];
      for await (const item of runtime.requests.call("w1", { ...request, traceContext })) items.push(item as GenerateResponse);
      return items;
    };
    const valid = await serve({ traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" });
    const validEnd = valid.at(-1);
    assert.equal(validEnd?.type === "request-end" && validEnd.finishReason, "length");
    assert.equal(runtime.invalidMessages.counts.get("trace-context"), undefined);
    const served = await serve({ traceparent: "00-zz-00f067aa0ba902b7-01" });
    const end = served.at(-1);
    assert.equal(end?.type === "request-end" && end.finishReason, "length");
    assert.equal(end?.type === "request-end" && end.completionTokens, 3);
    assert.equal(runtime.invalidMessages.counts.get("trace-context"), 1);
    assert.equal(runtime.invalidMessages.counts.get("generate-request"), undefined, "the request itself was not refused");
  } finally {
    await worker.close(0);
    await runtime.close();
  }
});
