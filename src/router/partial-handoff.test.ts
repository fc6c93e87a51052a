import assert from "node:assert/strict";
import { test } from "node:test";
import { MockerEngine } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import type { GenerateRequest, GenerateResponse, RequestEnd } from "../protocol/index.js";
import { createEmbeddedRuntime, type Runtime } from "../runtime/index.js";
import { WorkerHost } from "../worker/index.js";
import { ActiveLoad } from "./active-load.js";
import type { OverlapScores } from "./kv-index/radix-tree.js";
import type { KvIndexView } from "./kv-policy.js";
import type { RoutingPolicy } from "./policy.js";
import { type PrefillOutcome, PrefillStage } from "./prefill-stage.js";
import { Router } from "./router.js";

// The router chooses a disaggregated request's decode worker before its prefill, tells the prefill
// worker what the KV index says that worker holds, and sends the decode half there.
const BLOCK = 4;
const BYTES_PER_TOKEN = 1000;
const prompt = Array.from({ length: 12 }, (_, i) => 40 + i);
const request: GenerateRequest = {
  type: "generate-request",
  requestId: "r",
  model: "m",
  tokenIds: prompt,
  sampling: { temperature: 0 },
  maxTokens: 6,
};

const mocker = (): MockerEngine => new MockerEngine({ blockSize: BLOCK, kvBlocks: 64, kvBytesPerToken: BYTES_PER_TOKEN });

/** Picks the named worker while it is a candidate. */
function prefer(id: () => string): RoutingPolicy {
  return { name: "prefer", select: (candidates) => candidates.find((w) => w.id === id()) ?? (candidates[0] as never) };
}

/** An index that says worker `d1` and `d2` each hold the prompt's first 2 blocks on their device. */
const index: KvIndexView = {
  findMatches: (): OverlapScores => ({
    scores: new Map([
      ["d1", 2],
      ["d2", 2],
    ]),
    treeSizes: new Map(),
  }),
};

async function collect(stream: AsyncIterable<GenerateResponse>): Promise<{ tokens: number[]; end: RequestEnd }> {
  const tokens: number[] = [];
  let end: RequestEnd | undefined;
  for await (const item of stream) {
    if (item.type === "token-delta") tokens.push(...item.tokenIds);
    else end = item;
  }
  return { tokens, end: end as RequestEnd };
}

async function deployment(decodeId: () => string, options: { stage?: typeof PrefillStage } = {}) {
  const runtime: Runtime = createEmbeddedRuntime();
  const host = (id: string, role: "prefill" | "decode") =>
    WorkerHost.create({ runtime, id, role, engine: mocker(), modelName: "m", logger: silentLogger });
  const hosts = { p1: await host("p1", "prefill"), d1: await host("d1", "decode"), d2: await host("d2", "decode") };
  const activeLoad = new ActiveLoad({ routerId: "test", clock: runtime.clock });
  const outcomes: { outcome: PrefillOutcome; booked: number }[] = [];
  const ends: RequestEnd[] = [];
  const prefillRouter = new Router({ runtime, policy: prefer(() => "p1"), logger: silentLogger, roles: ["prefill"] });
  const Stage = options.stage ?? PrefillStage;
  const prefill = new Stage({
    router: prefillRouter,
    index,
    blockSize: BLOCK,
    // When the prefill is done, the decode worker's blocks are already booked.
    onOutcome: (outcome) => outcomes.push({ outcome, booked: activeLoad.of(decodeId()).decodeBlocks }),
    onDecodeEnd: (end) => ends.push(end),
  });
  const router = new Router({ runtime, policy: prefer(decodeId), logger: silentLogger, activeLoad, prefill });
  return {
    runtime,
    hosts,
    router,
    activeLoad,
    outcomes,
    ends,
    async close() {
      router.close();
      prefillRouter.close();
      await Promise.all(Object.values(hosts).map((h) => h.close(0)));
      await runtime.close();
    },
  };
}

async function reference(): Promise<number[]> {
  const engine = mocker();
  try {
    return (await collect(engine.generate(request, { signal: new AbortController().signal }))).tokens;
  } finally {
    await engine.close();
  }
}

test("the decode worker that holds the prompt's first blocks is sent only the rest of its KV", async () => {
  const expected = await reference();
  const d = await deployment(() => "d2");
  try {
    // d2 served the prompt before, so it caches its 3 whole blocks.
    await collect(d.runtime.requests.call("d2", request) as AsyncIterable<GenerateResponse>);
    const call = await d.router.route(request, { signal: new AbortController().signal });
    assert.equal(call.workerId, "d2");
    assert.equal(call.prefillWorkerId, "p1");
    const { tokens, end } = await collect(call.stream);
    assert.deepEqual(tokens, expected);
    assert.deepEqual(d.outcomes, [{ outcome: "remote", booked: 3 }], "the 12-token prompt's 3 blocks were booked on d2");
    assert.equal(end.prefilledLocally, undefined);
    // The index said 2 blocks (8 tokens): the other 4 tokens' KV moved.
    assert.equal(end.kvTransfer?.bytes, 4 * BYTES_PER_TOKEN);
    assert.equal(end.kvTransfer?.savedBytes, 8 * BYTES_PER_TOKEN);
    assert.deepEqual(d.ends, [end]);
    assert.equal(d.activeLoad.of("d2").decodeBlocks, 0, "the booking ended with the request");
  } finally {
    await d.close();
  }
});

test("a decode worker the index wrongly says holds them prefills the prompt itself", async () => {
  const expected = await reference();
  const d = await deployment(() => "d1");
  try {
    const call = await d.router.route(request, { signal: new AbortController().signal });
    assert.equal(call.workerId, "d1");
    const { tokens, end } = await collect(call.stream);
    assert.deepEqual(tokens, expected);
    assert.equal(end.prefilledLocally, true);
    assert.equal(end.kvTransfer, undefined);
  } finally {
    await d.close();
  }
});

test("when the chosen decode worker leaves during the prefill, another one takes the request and prefills it", async () => {
  const expected = await reference();
  let leaving: WorkerHost | undefined;
  let router: Router | undefined;
  class LeavingStage extends PrefillStage {
    override async run(...args: Parameters<PrefillStage["run"]>) {
      const staged = await super.run(...args);
      await leaving?.close(0);
      while (router?.eligibleWorkers("m").some((w) => w.id === "d2")) await new Promise((r) => setTimeout(r, 5));
      return staged;
    }
  }
  const d = await deployment(() => "d2", { stage: LeavingStage });
  leaving = d.hosts.d2;
  router = d.router;
  try {
    const call = await d.router.route(request, { signal: new AbortController().signal });
    assert.equal(call.workerId, "d1");
    const { tokens, end } = await collect(call.stream);
    assert.deepEqual(tokens, expected);
    assert.equal(end.prefilledLocally, true);
    assert.equal(d.activeLoad.of("d2").decodeBlocks, 0, "the departed worker's booking was released");
  } finally {
    await d.close();
  }
});
