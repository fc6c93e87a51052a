import assert from "node:assert/strict";
import { test } from "node:test";
import { type GenerateRequest, type GenerateResponse, hashBlocks, type KvEvent, type RequestEnd } from "../../protocol/index.js";
import { VirtualClock } from "../../runtime/index.js";
import { MockerEngine, type MockerEngineOptions } from "./mocker-engine.js";
import { polynomialTimingModel } from "./timing-model.js";

function setup(options: MockerEngineOptions = {}) {
  const clock = new VirtualClock();
  const engine = new MockerEngine({ clock, blockSize: 4, kvBlocks: 64, ...options });
  const events: KvEvent[] = [];
  engine.onKvEvents((batch) => events.push(...batch));
  return { clock, engine, events };
}

function request(tokens: number[], maxTokens = 5, requestId = "r"): GenerateRequest {
  return { type: "generate-request", requestId, model: "m", tokenIds: tokens, sampling: { temperature: 0 }, maxTokens };
}

async function run(
  engine: MockerEngine,
  clock: VirtualClock,
  req: GenerateRequest,
  signal = new AbortController().signal,
): Promise<{ tokens: number[]; end: RequestEnd; firstTokenAt: number; endAt: number }> {
  const tokens: number[] = [];
  let end: GenerateResponse | undefined;
  let firstTokenAt = -1;
  let endAt = -1;
  const consume = (async () => {
    for await (const item of engine.generate(req, { signal })) {
      if (item.type === "token-delta") {
        if (firstTokenAt < 0) firstTokenAt = clock.now();
        tokens.push(...item.tokenIds);
      }
      end = item;
    }
    endAt = clock.now();
  })();
  consume.catch(() => {}); // awaited below; this only keeps an early failure from counting as unhandled
  await clock.runUntilIdle();
  await consume;
  assert.equal(end?.type, "request-end");
  return { tokens, end: end as RequestEnd, firstTokenAt, endAt };
}

const prompt = (n: number, offset = 0): number[] => Array.from({ length: n }, (_, i) => 65 + ((i + offset) % 26));

test("generates max_tokens tokens, first token after the modelled prefill time", async () => {
  const { engine, clock } = setup();
  const { tokens, end, firstTokenAt } = await run(engine, clock, request(prompt(10), 5));
  assert.equal(tokens.length, 5);
  assert.deepEqual([end.finishReason, end.promptTokens, end.completionTokens], ["length", 10, 5]);
  assert.equal(firstTokenAt, polynomialTimingModel().prefillMs(10));
});

test("the same prompt gives the same text", async () => {
  const { engine, clock } = setup();
  const a = await run(engine, clock, request(prompt(10), 8));
  const b = await run(engine, clock, request(prompt(10), 8));
  const c = await run(engine, clock, request(prompt(10, 3), 8));
  assert.deepEqual(a.tokens, b.tokens);
  assert.notDeepEqual(a.tokens, c.tokens);
});

test("a repeated prompt hits the prefix cache and stored events chain by parent hash", async () => {
  const { engine, clock, events } = setup();
  await run(engine, clock, request(prompt(13), 1));
  const stored = events.filter((e) => e.type === "kv-block-stored");
  assert.equal(stored.length, 3, "13 prompt tokens = 3 full blocks of 4");
  assert.equal(stored[0]?.type === "kv-block-stored" && stored[0].parentHash, null);
  assert.equal(
    stored[1]?.type === "kv-block-stored" && stored[1].parentHash,
    stored[0]?.type === "kv-block-stored" && stored[0].blocks[0]?.blockHash,
  );
  const again = await run(engine, clock, request(prompt(13), 1));
  assert.equal(again.end.cachedTokens, 12);
});

test("a prompt longer than the token budget is prefilled in chunks", async () => {
  const { engine, clock } = setup({ maxBatchedTokens: 8, timing: { prefillMs: () => 10, decodeMs: () => 1 } });
  const { firstTokenAt } = await run(engine, clock, request(prompt(30), 1));
  assert.equal(firstTokenAt, 40, "30 tokens / 8 per step = 4 steps of 10 ms");
});

test("unused blocks are evicted least recently used first, a sequence's tail before its head (as vLLM frees them)", async () => {
  const { engine, clock, events } = setup({ kvBlocks: 4 });
  const a = prompt(9);
  await run(engine, clock, request(a, 1));
  await run(engine, clock, request(prompt(13, 5), 1));
  const removed = events.filter((e) => e.type === "kv-block-removed").flatMap((e) => e.blockHashes);
  const storedA = events
    .filter((e) => e.type === "kv-block-stored")
    .slice(0, 2)
    .flatMap((e) => e.blocks.map((b) => b.blockHash));
  assert.deepEqual(removed, [...storedA].reverse());
});

test("stored events carry each block's local token hash, Dynamo's tree key", async () => {
  const { engine, clock, events } = setup();
  const tokens = prompt(9);
  await run(engine, clock, request(tokens, 1));
  const blocks = events.flatMap((e) => (e.type === "kv-block-stored" ? e.blocks : []));
  const expected = hashBlocks(tokens, 4);
  assert.deepEqual(
    blocks.map((b) => b.tokensHash),
    expected.local,
  );
  assert.deepEqual(
    blocks.map((b) => b.blockHash),
    expected.sequence,
  );
});

test("concurrent requests run in one batch and each completes", async () => {
  const { engine, clock } = setup();
  const results = await Promise.all([0, 1, 2, 3].map((i) => run(engine, clock, request(prompt(8, i), 6, `r${i}`))));
  assert.ok(results.every((r) => r.tokens.length === 6));
  assert.equal(engine.load().activeKvBlocks, 0);
});

test("aborting ends with cancelled and frees the request's blocks", async () => {
  const { engine, clock } = setup();
  const controller = new AbortController();
  const tokens: number[] = [];
  let end: GenerateResponse | undefined;
  const consume = (async () => {
    for await (const item of engine.generate(request(prompt(8), 1000), { signal: controller.signal })) {
      if (item.type === "token-delta") {
        tokens.push(...item.tokenIds);
        if (tokens.length >= 3) controller.abort();
      }
      end = item;
    }
  })();
  await clock.runUntilIdle();
  await consume;
  assert.equal(end?.type === "request-end" && end.finishReason, "cancelled");
  assert.ok(tokens.length < 10);
  assert.equal(engine.load().activeKvBlocks, 0);
});

test("a request larger than the whole cache fails with a clear error", async () => {
  const { engine, clock } = setup({ kvBlocks: 2 });
  await assert.rejects(run(engine, clock, request(prompt(40), 1)), /more KV blocks than this worker has/);
});

test("KV pressure preempts the newest request, which still completes", async () => {
  const { engine, clock } = setup({ kvBlocks: 6 });
  const results = await Promise.all([0, 1].map((i) => run(engine, clock, request(prompt(8, i), 12, `r${i}`))));
  assert.ok(results.every((r) => r.tokens.length === 12 && r.end.finishReason === "length"));
});

test("the priority policy admits the most urgent waiting request first; fcfs admits the earliest", async () => {
  // One sequence at a time: a (priority 10) runs; b (10) and then c (0) wait.
  const order = async (schedulingPolicy: "fcfs" | "priority") => {
    const { engine, clock } = setup({ maxSequences: 1, schedulingPolicy });
    const runs = (
      [
        ["a", 10],
        ["b", 10],
        ["c", 0],
      ] as const
    ).map(([id, priority]) => run(engine, clock, { ...request(prompt(8), 3, id), priority }).then((r) => ({ id, ...r })));
    return (await Promise.all(runs)).sort((x, y) => x.firstTokenAt - y.firstTokenAt).map((r) => r.id);
  };
  assert.deepEqual(await order("fcfs"), ["a", "b", "c"]);
  assert.deepEqual(await order("priority"), ["a", "c", "b"]);
});

test("under KV pressure the priority policy preempts the least urgent running request, fcfs the newest", async () => {
  // 6 blocks of 4 tokens; each request grows to 8 + 12 = 20 tokens (5 blocks): both cannot stay.
  const finishOrder = async (schedulingPolicy: "fcfs" | "priority") => {
    const { engine, clock } = setup({ kvBlocks: 6, schedulingPolicy });
    const runs = (
      [
        ["older-deferred", 10],
        ["newer-urgent", 0],
      ] as const
    ).map(([id, priority]) =>
      run(engine, clock, { ...request(prompt(8, priority), 12, id), priority }).then((r) => ({ id, ...r })),
    );
    const results = await Promise.all(runs);
    assert.ok(results.every((r) => r.tokens.length === 12 && r.end.finishReason === "length"));
    return results.sort((x, y) => x.endAt - y.endAt).map((r) => r.id);
  };
  assert.deepEqual(await finishOrder("fcfs"), ["older-deferred", "newer-urgent"]);
  assert.deepEqual(await finishOrder("priority"), ["newer-urgent", "older-deferred"]);
});

test("clearing the cache drops unused blocks and emits kv-cache-cleared", async () => {
  const { engine, clock, events } = setup();
  await run(engine, clock, request(prompt(13), 1));
  engine.clearCache();
  assert.equal(events.at(-1)?.type, "kv-cache-cleared");
  const again = await run(engine, clock, request(prompt(13), 1));
  assert.equal(again.end.cachedTokens, 0);
});

// Regression: a request preempted during its prefill found its own computed blocks when admitted
// again and reported them as cached, so a replay's hit rate could pass the unlimited-cache bound.
test("a request preempted during its prefill reports the cached tokens of its first admission (vLLM's num_cached_tokens)", async () => {
  // 6 blocks of 4 tokens, one block of prefill a step: a (4 prompt tokens) decodes while b's 16-token
  // prompt is prefilled beside it; a grows into the block b needs, b (the newest) is preempted with
  // part of its prompt computed, and is admitted again after a ends.
  const { engine, clock } = setup({ kvBlocks: 6, maxBatchedTokens: 4 });
  const [a, b] = await Promise.all([
    run(engine, clock, request(prompt(4, 1), 12, "a")),
    run(engine, clock, request(prompt(16, 2), 2, "b")),
  ]);
  assert.ok(a.tokens.length === 12 && b.tokens.length === 2);
  assert.ok(b.firstTokenAt > a.endAt, "b was preempted and finished its prefill after a ended");
  assert.equal(b.end.cachedTokens, 0, "nothing of b's prompt was cached when it arrived");
});
