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

test("mocker: the modelled export leaves out the blocks the decode engine holds, which must hold them", async () => {
  const clock = new VirtualClock();
  const [prefiller, decoder, aggregated] = [0, 1, 2].map(
    () => new MockerEngine({ clock, blockSize: 16, kvBytesPerToken: 1000 }),
  ) as [MockerEngine, MockerEngine, MockerEngine];
  const signal = new AbortController().signal;
  const whole = await timed(clock, aggregated.generate(request, { signal }));
  const prefillDone = prefiller.prefill(request, { signal, decodeHeldTokens: 970 });
  await clock.runUntilIdle();
  const result = await prefillDone;
  // 970 tokens said held: the export starts at block 60 (token 960) and holds the other 40 tokens.
  assert.deepEqual(result.kv, { format: "modelled", bytes: 40 * 1000, fromToken: 960, wholeBytes: 1000 * 1000 });
  const importedKv = { format: "modelled", firstToken: result.firstToken as number, transferMs: 1, fromToken: 960 } as const;
  // The decode engine has not seen the prompt: it refuses, retryably, before admitting anything.
  const refused = (async () => {
    for await (const _ of decoder.generate(request, { signal, importedKv })) assert.fail("nothing is generated");
  })();
  refused.catch(() => undefined);
  await clock.runUntilIdle();
  await assert.rejects(refused, { code: "TRANSFER_FAILED", retryable: true, message: /first 960 tokens \(0\)/ });
  // Once it caches the first 960 tokens (another prompt sharing them), it takes the rest from the handoff.
  await timed(clock, decoder.generate({ ...request, tokenIds: [...prompt.slice(0, 960), ...prompt.slice(0, 40)] }, { signal }));
  const decoded = await timed(clock, decoder.generate(request, { signal, importedKv }));
  assert.deepEqual(decoded.tokens, whole.tokens);
  await Promise.all([prefiller, decoder, aggregated].map((e) => e.close()));
});
