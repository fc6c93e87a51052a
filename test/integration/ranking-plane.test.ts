import assert from "node:assert/strict";
import { test } from "node:test";
import type { Engine } from "../../src/engines/index.js";
import { rankAll } from "../../src/frontend/pooling-flow.js";
import { ArmatureError, isArmatureError, queryOf, type RankRequest, subjects } from "../../src/protocol/index.js";
import { poolingCluster } from "../helpers/pooling-cluster.js";

// The rank-request → rank-response path through the real worker host, request plane and router (in
// one process), with engines whose scores are written out by hand: what a worker answers, what it
// refuses, and how the documents left move off a worker that fails midway, each with its own query.

type Rank = NonNullable<Engine["rank"]>;

/** A pair scores its query's first id over 100 plus its document's first over 1000, and reads both lengths. */
const byHand: Rank = async function* (request) {
  for (const [index, document] of request.documents.entries()) {
    const query = queryOf(request, index);
    yield { score: (query[0] as number) / 100 + (document[0] as number) / 1000, promptTokens: query.length + document.length };
  }
};

const request = (queries: number[][], documents: number[][]): RankRequest => ({
  type: "rank-request",
  requestId: "r1",
  model: "m",
  queries,
  documents,
});

const cluster = (workers: { id: string; rank: Rank | undefined }[]) => poolingCluster(workers);

async function rejection(promise: Promise<unknown>): Promise<ArmatureError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isArmatureError(error), String(error));
  return error;
}

const options = { signal: AbortSignal.timeout(10_000), migrationLimit: 3 };

test("a worker answers one rank-response per document, in order, one query for all or one per document", async () => {
  const c = await cluster([{ id: "w1", rank: byHand }]);
  try {
    const items: unknown[] = [];
    for await (const item of c.runtime.requests.call(subjects.rank("w1"), request([[50, 1]], [[7], [8, 9]]))) items.push(item);
    assert.deepEqual(items, [
      { type: "rank-response", index: 0, score: 0.507, promptTokens: 3 },
      { type: "rank-response", index: 1, score: 0.508, promptTokens: 4 },
    ]);
    const paired = await rankAll(c.router, request([[10], [20]], [[1], [2]]), options);
    assert.deepEqual(paired, { workerId: "w1", scores: [0.101, 0.202], promptTokens: 4 });
    const card = c.router.workers.forModel("m")[0]?.card;
    assert.deepEqual(card?.kinds, ["chat", "rerank"]);
  } finally {
    await c.close();
  }
});

test("a malformed rank-request is refused naming its field, and counted", async () => {
  const c = await cluster([{ id: "w1", rank: byHand }]);
  try {
    const error = await rejection(
      (async () => {
        for await (const _ of c.runtime.requests.call(subjects.rank("w1"), request([[1], [2]], [[3], [4], [5]])));
      })(),
    );
    assert.equal(error.code, "REQUEST_INVALID");
    assert.match(error.message, /queries must hold one query or one per document \(3\), got 2/);
    assert.equal(c.runtime.invalidMessages.counts.get("rank-request"), 1);
  } finally {
    await c.close();
  }
});

test("a worker whose engine cannot rank refuses, naming the model and the engine", async () => {
  const c = await cluster([{ id: "w1", rank: undefined }]);
  try {
    const error = await rejection(rankAll(c.router, request([[1]], [[2]]), options));
    assert.equal(error.code, "NOT_SUPPORTED");
    assert.equal(error.param, "model");
    assert.match(error.message, /model m cannot rank: the mocker engine scores no pairs here/);
  } finally {
    await c.close();
  }
});

test("a worker that fails midway hands the documents it had not scored to another, each with its own query", async () => {
  const seen: RankRequest[] = [];
  const failing: Rank = async function* (r) {
    seen.push(r);
    yield { score: 0.5, promptTokens: 2 };
    throw new ArmatureError("WORKER_UNAVAILABLE", "the worker went away", { retryable: true });
  };
  const c = await cluster([
    { id: "a-failing", rank: failing },
    { id: "b-healthy", rank: byHand },
  ]);
  try {
    const migrations: [string, number][] = [];
    const result = await rankAll(c.router, request([[10], [20], [30]], [[1], [2], [3]]), {
      ...options,
      onMigrate: (from, answered) => migrations.push([from, answered]),
    });
    assert.deepEqual(migrations, [["a-failing", 1]]);
    assert.equal(seen.length, 1);
    assert.deepEqual(result, { workerId: "b-healthy", scores: [0.5, 0.202, 0.303], promptTokens: 6 });
  } finally {
    await c.close();
  }
});
