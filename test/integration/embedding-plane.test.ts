import assert from "node:assert/strict";
import { test } from "node:test";
import type { Engine } from "../../src/engines/index.js";
import { embedAll } from "../../src/frontend/pooling-flow.js";
import {
  ArmatureError,
  decodeEmbedding,
  type EmbedRequest,
  isArmatureError,
  subjects,
  type WorkerRole,
} from "../../src/protocol/index.js";
import type { Runtime } from "../../src/runtime/index.js";
import { poolingCluster } from "../helpers/pooling-cluster.js";

// The embed-request → embed-response path through the real worker host, request plane and router
// (in one process), with engines whose embeddings are written out by hand: which worker is chosen,
// what each refuses, and how a request moves off a worker that fails midway.

type Embed = NonNullable<Engine["embed"]>;

/** Input [a, b, …] embeds as [a, length]: the test can tell from a vector which input it came from. */
const byHand: Embed = async function* (request) {
  for (const input of request.inputs) yield Float32Array.of(input[0] as number, input.length);
};

const request = (inputs: number[][]): EmbedRequest => ({ type: "embed-request", requestId: "r1", model: "m", inputs });

const cluster = (workers: { id: string; role?: WorkerRole; embed: Embed | undefined }[]) => poolingCluster(workers);

async function collect(runtime: Runtime, workerId: string, payload: unknown): Promise<unknown[]> {
  const items: unknown[] = [];
  for await (const item of runtime.requests.call(subjects.embed(workerId), payload)) items.push(item);
  return items;
}

async function rejection(promise: Promise<unknown>): Promise<ArmatureError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isArmatureError(error), String(error));
  return error;
}

test("a worker answers one embed-response per input, in order, with the vector's float32 bytes", async () => {
  const c = await cluster([{ id: "w1", embed: byHand }]);
  try {
    const items = (await collect(c.runtime, "w1", request([[7, 8, 9], [4]]))) as {
      index: number;
      embedding: string;
      promptTokens: number;
    }[];
    assert.deepEqual(
      items.map((i) => [i.index, decodeEmbedding(i.embedding), i.promptTokens]),
      [
        [0, [7, 3], 3],
        [1, [4, 1], 1],
      ],
    );
  } finally {
    await c.close();
  }
});

test("a malformed embed-request is refused naming its field, and counted", async () => {
  const c = await cluster([{ id: "w1", embed: byHand }]);
  try {
    const error = await rejection(collect(c.runtime, "w1", { ...request([[1], []]) }));
    assert.equal(error.code, "REQUEST_INVALID");
    assert.match(error.message, /inputs\[1\] must hold at least one token id/);
    assert.equal(c.runtime.invalidMessages.counts.get("embed-request"), 1);
  } finally {
    await c.close();
  }
});

test("a mocker worker refuses embeddings, naming the model and the engine", async () => {
  const c = await cluster([{ id: "w1", embed: undefined }]);
  try {
    const error = await rejection(embedAll(c.router, request([[1]]), { signal: AbortSignal.timeout(10_000), migrationLimit: 3 }));
    assert.equal(error.code, "NOT_SUPPORTED");
    assert.equal(error.param, "model");
    assert.match(error.message, /model m is served by the mocker engine, which computes no embeddings/);
  } finally {
    await c.close();
  }
});

test("embeddings go to prefill or aggregated workers, never to decode workers", async () => {
  const c = await cluster([
    { id: "d1", role: "decode", embed: byHand },
    { id: "p1", role: "prefill", embed: byHand },
  ]);
  try {
    for (let i = 0; i < 3; i++) {
      const result = await embedAll(c.router, request([[i + 1]]), { signal: AbortSignal.timeout(10_000), migrationLimit: 0 });
      assert.equal(result.workerId, "p1");
      assert.deepEqual(decodeEmbedding(result.embeddings[0] as string), [i + 1, 1]);
    }
    await c.hosts[1]?.close(100);
    const error = await rejection(embedAll(c.router, request([[1]]), { signal: AbortSignal.timeout(10_000), migrationLimit: 0 }));
    assert.equal(error.code, "ROUTER_NO_WORKER");
    assert.match(error.message, /no aggregated or prefill worker serves model m/);
  } finally {
    await c.close();
  }
});

test("a request goes to the worker with fewer embedding calls in flight", async () => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const slow: Embed = async function* (r, o) {
    await held;
    yield* byHand(r, o);
  };
  const c = await cluster([
    { id: "w1", embed: slow },
    { id: "w2", embed: slow },
  ]);
  try {
    const signal = AbortSignal.timeout(10_000);
    const first = embedAll(c.router, request([[1]]), { signal, migrationLimit: 0 });
    const second = embedAll(c.router, request([[2]]), { signal, migrationLimit: 0 });
    release();
    const chosen = [(await first).workerId, (await second).workerId].sort();
    assert.deepEqual(chosen, ["w1", "w2"]);
  } finally {
    await c.close();
  }
});

test("a worker that fails midway hands the inputs it had not answered to another", async () => {
  const seen: number[][][] = [];
  const failing: Embed = async function* (r) {
    seen.push(r.inputs.map((i) => [...i]));
    yield Float32Array.of(r.inputs[0]?.[0] as number, -1);
    throw new ArmatureError("WORKER_UNAVAILABLE", "the worker went away", { retryable: true });
  };
  const c = await cluster([
    { id: "a-failing", embed: failing },
    { id: "b-healthy", embed: byHand },
  ]);
  try {
    const migrations: [string, number][] = [];
    const result = await embedAll(c.router, request([[10], [20, 21], [30]]), {
      signal: AbortSignal.timeout(10_000),
      migrationLimit: 3,
      onMigrate: (from, embedded) => migrations.push([from, embedded]),
    });
    assert.deepEqual(migrations, [["a-failing", 1]]);
    assert.deepEqual(seen, [[[10], [20, 21], [30]]]);
    assert.equal(result.workerId, "b-healthy");
    assert.deepEqual(
      result.embeddings.map((e) => decodeEmbedding(e)),
      [
        [10, -1],
        [20, 2],
        [30, 1],
      ],
    );
    // With no moves left, the failure is the caller's.
    const error = await rejection(
      embedAll(c.router, request([[1], [2]]), { signal: AbortSignal.timeout(10_000), migrationLimit: 0 }),
    );
    assert.equal(error.code, "WORKER_UNAVAILABLE");
  } finally {
    await c.close();
  }
});
