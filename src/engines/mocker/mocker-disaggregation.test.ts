import assert from "node:assert/strict";
import { test } from "node:test";
import type { GenerateRequest, GenerateResponse, RequestEnd } from "../../protocol/index.js";
import { VirtualClock } from "../../runtime/index.js";
import type { GenerateOptions } from "../engine.js";
import { MockerEngine } from "./mocker-engine.js";

const prompt = Array.from({ length: 1000 }, (_, i) => 100 + (i % 50));
const request: GenerateRequest = {
  type: "generate-request",
  requestId: "r",
  model: "m",
  tokenIds: prompt,
  sampling: { temperature: 0 },
  maxTokens: 8,
};

async function timed(clock: VirtualClock, stream: AsyncIterable<GenerateResponse>) {
  const start = clock.now();
  const tokens: number[] = [];
  let firstAt = -1;
  let end: RequestEnd | undefined;
  const consume = (async () => {
    for await (const item of stream) {
      if (item.type === "token-delta") {
        if (firstAt < 0) firstAt = clock.now() - start;
        tokens.push(...item.tokenIds);
      } else end = item;
    }
  })();
  await clock.runUntilIdle();
  await consume;
  return { tokens, firstAt, end };
}

test("mocker: prefill on one engine, modelled transfer, decode on another give the aggregated tokens", async () => {
  const clock = new VirtualClock();
  const [prefiller, decoder, aggregated] = [0, 1, 2].map(() => new MockerEngine({ clock, blockSize: 16, kvBytesPerToken: 1000 }));
  const signal = new AbortController().signal;
  const whole = await timed(clock, (aggregated as MockerEngine).generate(request, { signal }));

  const prefillDone = (prefiller as MockerEngine).prefill(request, { signal });
  await clock.runUntilIdle();
  const result = await prefillDone;
  assert.equal(result.kv?.format, "modelled");
  assert.equal(result.kv?.bytes, prompt.length * 1000);
  assert.equal(result.firstToken, whole.tokens[0]);

  const options: GenerateOptions = {
    signal,
    importedKv: { format: "modelled", firstToken: result.firstToken as number, transferMs: 10 },
  };
  const decoded = await timed(clock, (decoder as MockerEngine).generate(request, options));
  assert.deepEqual(decoded.tokens, whole.tokens);
  // The first token waits for the modelled transfer only: no prefill compute on the decode engine.
  assert.ok(Math.abs(decoded.firstAt - 10) < 1e-6, `first token after ${decoded.firstAt} ms`);
  assert.ok(whole.firstAt > 10, `aggregated prefill of 1000 tokens takes ${whole.firstAt} ms`);
  assert.equal(decoded.end?.completionTokens, 8);
  await Promise.all([prefiller, decoder, aggregated].map((e) => e?.close()));
});
