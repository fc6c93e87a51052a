import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { until } from "../../test/helpers/poll.js";
import { ensureTinyModel, LlamaCppEngine } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import type { GenerateRequest, GenerateResponse, KvHandoff, RequestEnd, WorkerRole } from "../protocol/index.js";
import { createEmbeddedRuntime, type Runtime } from "../runtime/index.js";
import { WorkerHost } from "./worker-host.js";

// Prefill and decode worker hosts with real llama.cpp engines on one embedded runtime: the handoff
// moves through their transfer agents, and every failure ends in a complete answer with nothing left behind.
let modelPath: string;

const prompt = Array.from({ length: 40 }, (_, i) => 30 + ((i * 7) % 90));
const request = (extra: Partial<GenerateRequest> = {}): GenerateRequest => ({
  type: "generate-request",
  requestId: "r",
  model: "tiny",
  tokenIds: prompt,
  sampling: { temperature: 0 },
  maxTokens: 16,
  ...extra,
});

async function worker(runtime: Runtime, id: string, role: WorkerRole, handoffTtlMs?: number): Promise<WorkerHost> {
  const engine = await LlamaCppEngine.create({ modelPath, sequences: 2, contextSizePerSequence: 256 });
  return WorkerHost.create({ runtime, engine, id, role, modelName: "tiny", logger: silentLogger, handoffTtlMs });
}

async function call(runtime: Runtime, id: string, req: GenerateRequest): Promise<{ tokens: number[]; end: RequestEnd }> {
  const tokens: number[] = [];
  let end: RequestEnd | undefined;
  for await (const item of runtime.requests.call(id, req) as AsyncIterable<GenerateResponse>) {
    if (item.type === "token-delta") tokens.push(...item.tokenIds);
    else end = item;
  }
  return { tokens, end: end as RequestEnd };
}

const sharedFiles = (host: WorkerHost): string[] =>
  readdirSync(host.transferAgent?.sharedDir ?? "").filter((name) => !name.startsWith("."));

/** Waits until a prefill worker holds no export: the handoff is dropped at once, its file a moment later. */
const exportsFreed = (host: WorkerHost) =>
  until(
    "held handoffs and their files",
    async () => ({ held: host.heldHandoffs, files: sharedFiles(host) }),
    (now) => now.held === 0 && now.files.length === 0,
    5000,
  );

let runtime: Runtime;
let reference: number[];
let aggregated: WorkerHost;
before(async () => {
  modelPath = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-handoff-")));
  runtime = createEmbeddedRuntime();
  aggregated = await worker(runtime, "agg", "aggregated");
  reference = (await call(runtime, "agg", request())).tokens;
});
after(async () => {
  await aggregated.close(0);
  await runtime.close();
});

test("a handoff moves the prompt's KV to the decode worker, which continues as aggregated would; nothing is left", async () => {
  const prefill = await worker(runtime, "p1", "prefill");
  const decode = await worker(runtime, "d1", "decode");
  try {
    const first = await call(runtime, "p1", request({ maxTokens: 1, disaggregation: { phase: "prefill" } }));
    const handoff = first.end.kvHandoff as KvHandoff;
    assert.equal(first.tokens.length, 0, "the prefill answer carries the first token in the handoff");
    assert.equal(handoff.firstToken, reference[0]);
    assert.equal(handoff.promptTokens, prompt.length);
    assert.equal(prefill.heldHandoffs, 1);
    const rest = await call(runtime, "d1", request({ disaggregation: { phase: "decode", handoff } }));
    assert.deepEqual(rest.tokens, reference);
    assert.equal(rest.end.prefilledLocally, undefined);
    assert.equal(rest.end.kvTransfer?.bytes, handoff.bytes);
    // The decode worker's confirmation frees the export.
    await exportsFreed(prefill);
    assert.deepEqual(sharedFiles(decode), []);
  } finally {
    await prefill.close(0);
    await decode.close(0);
  }
});

test("when the prefill worker dies before the decode worker pulls, the decode worker prefills locally", async () => {
  const prefill = await worker(runtime, "p2", "prefill");
  const decode = await worker(runtime, "d2", "decode");
  try {
    const { end } = await call(runtime, "p2", request({ maxTokens: 1, disaggregation: { phase: "prefill" } }));
    const dir = prefill.transferAgent?.sharedDir as string;
    await prefill.close(0);
    assert.equal(existsSync(dir), false, "a closed prefill worker leaves no exported KV");
    const rest = await call(runtime, "d2", request({ disaggregation: { phase: "decode", handoff: end.kvHandoff as KvHandoff } }));
    assert.deepEqual(rest.tokens, reference);
    assert.equal(rest.end.prefilledLocally, true);
    assert.deepEqual(sharedFiles(decode), []);
  } finally {
    await decode.close(0);
  }
});

test("a handoff no decode worker takes expires and is freed", async () => {
  const prefill = await worker(runtime, "p3", "prefill", 500);
  try {
    await call(runtime, "p3", request({ maxTokens: 1, disaggregation: { phase: "prefill" } }));
    assert.equal(prefill.heldHandoffs, 1);
    assert.equal(sharedFiles(prefill).length, 1);
    await exportsFreed(prefill);
  } finally {
    await prefill.close(0);
  }
});

test("a handoff whose bytes are not the prompt's is refused by the engine and the decode worker prefills locally", async () => {
  const prefill = await worker(runtime, "p4", "prefill");
  const decode = await worker(runtime, "d4", "decode");
  try {
    const other = await call(
      runtime,
      "p4",
      request({ tokenIds: prompt.slice(5), maxTokens: 1, disaggregation: { phase: "prefill" } }),
    );
    const rest = await call(
      runtime,
      "d4",
      request({ disaggregation: { phase: "decode", handoff: other.end.kvHandoff as KvHandoff } }),
    );
    assert.deepEqual(rest.tokens, reference);
    assert.equal(rest.end.prefilledLocally, true);
    assert.deepEqual(sharedFiles(decode), []);
  } finally {
    await prefill.close(0);
    await decode.close(0);
  }
});

test("a decode worker holding the prompt's first blocks pulls only the rest; one that no longer holds them prefills locally", async () => {
  const prefill = await worker(runtime, "p5", "prefill");
  const decode = await worker(runtime, "d5", "decode");
  const stale = await worker(runtime, "d6", "decode");
  try {
    // d5 served the prompt before: its sequence keeps its 2 whole blocks (and 8 tokens more).
    assert.deepEqual((await call(runtime, "d5", request())).tokens, reference);
    const prefillAsking = request({ maxTokens: 1, disaggregation: { phase: "prefill", decodeHeldTokens: 32 } });
    const whole = (await call(runtime, "p5", request({ maxTokens: 1, disaggregation: { phase: "prefill" } }))).end
      .kvHandoff as KvHandoff;
    const part = (await call(runtime, "p5", prefillAsking)).end.kvHandoff as KvHandoff;
    assert.equal(part.fromToken, 32);
    assert.equal(part.wholeBytes, whole.bytes);
    // 8 of the 40 tokens' KV, without the state file's per-cell metadata: under a quarter of the bytes.
    assert.ok(part.bytes * 4 < whole.bytes, `${part.bytes} of ${whole.bytes} bytes`);
    const rest = await call(runtime, "d5", request({ disaggregation: { phase: "decode", handoff: part } }));
    assert.deepEqual(rest.tokens, reference);
    assert.equal(rest.end.prefilledLocally, undefined);
    assert.equal(rest.end.kvTransfer?.bytes, part.bytes);
    assert.equal(rest.end.kvTransfer?.savedBytes, whole.bytes - part.bytes);
    // d6 never saw the prompt (the router's index was wrong): it refuses the suffix and prefills.
    const again = (await call(runtime, "p5", prefillAsking)).end.kvHandoff as KvHandoff;
    const local = await call(runtime, "d6", request({ disaggregation: { phase: "decode", handoff: again } }));
    assert.deepEqual(local.tokens, reference);
    assert.equal(local.end.prefilledLocally, true);
    assert.equal(local.end.kvTransfer, undefined);
    await call(runtime, "d6", request({ disaggregation: { phase: "decode", handoff: whole } }));
    for (const deadline = Date.now() + 5000; prefill.heldHandoffs > 0 && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(prefill.heldHandoffs, 0, "every pulled export was freed");
    for (const host of [prefill, decode, stale]) assert.deepEqual(sharedFiles(host), []);
  } finally {
    await Promise.all([prefill.close(0), decode.close(0), stale.close(0)]);
  }
});
