import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { LocalConnector, type LocalWorkerExit } from "../../src/planner/index.js";
import { startArmature } from "../helpers/armature-process.js";
import { type ClusterServers, healthInstances, startClusterServers, waitForInstances } from "../helpers/cluster-servers.js";

// The local connector on real processes: mocker workers over a real nats-server and etcd, a
// frontend in front, and clients streaming the whole time the pool grows and shrinks.
let servers: ClusterServers;
before(async () => {
  servers = await startClusterServers();
});
after(() => servers.stop());

interface Outcome {
  readonly worker: string;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly error?: string;
  readonly tokens: number;
  readonly finish: string | null | undefined;
}

/**
 * Streams completions back to back until `stop` is set; records each one's outcome, and in
 * `streaming` the worker client `n` streams from while a response is open.
 */
async function streamUntil(
  client: OpenAI,
  stop: { done: boolean },
  outcomes: Outcome[],
  n: number,
  streaming: Map<number, { worker: string; startedAt: number }>,
): Promise<void> {
  for (let i = 0; !stop.done; i++) {
    const startedAt = Date.now();
    let worker = "";
    let tokens = 0;
    let finish: string | null | undefined;
    try {
      const { data, response } = await client.completions
        .create({
          model: "armature-mocker",
          prompt: `client ${n} request ${i}`,
          max_tokens: 40,
          stream: true,
          stream_options: { include_usage: true },
        })
        .withResponse();
      worker = response.headers.get("x-armature-worker") ?? "";
      streaming.set(n, { worker, startedAt });
      for await (const chunk of data) {
        finish = chunk.choices[0]?.finish_reason ?? finish;
        if (chunk.usage) tokens = chunk.usage.completion_tokens;
      }
      outcomes.push({ worker, startedAt, endedAt: Date.now(), tokens, finish });
    } catch (error) {
      outcomes.push({ worker, startedAt, endedAt: Date.now(), tokens, finish, error: String(error) });
    } finally {
      streaming.delete(n);
    }
  }
}

test("scaling 1 → 3 → 1 mocker workers under streaming load: no request fails, the drained workers exit 0", async () => {
  const lines: string[] = [];
  const exits: LocalWorkerExit[] = [];
  const connector = await LocalConnector.create({
    workerArgs: { aggregated: ["--engine", "mocker", "--speedup-ratio", "0.5", "--log-level", "warn"] },
    // Through the environment, as `armature up` does: URLs may carry passwords.
    env: { ...process.env, ARMATURE_BUS: servers.nats.url, ARMATURE_DISCOVERY: `etcd://${servers.etcd.endpoint}` },
    onLine: (line, worker) => lines.push(`[${worker.name}] ${line}`),
    onExit: (exit) => exits.push(exit),
  });
  const until = async (what: string, predicate: () => Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + 20_000;
    while (!(await predicate())) {
      if (Date.now() > deadline) throw new Error(`${what} did not happen in time:\n${lines.join("\n")}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const ready = (n: number) => async () => (await connector.replicas("aggregated")).ready === n;
  let frontend: Awaited<ReturnType<typeof startArmature>> | undefined;
  const stop = { done: false };
  const outcomes: Outcome[] = [];
  let clients: Promise<void>[] = [];
  try {
    await connector.scale("aggregated", 1);
    await until("the first worker's start", ready(1));
    frontend = await startArmature(["frontend", ...servers.flags, "--port", "0", "--router", "round-robin"]);
    const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const streaming = new Map<number, { worker: string; startedAt: number }>();
    clients = [0, 1, 2, 3, 4, 5].map((n) => streamUntil(client, stop, outcomes, n, streaming));

    await connector.scale("aggregated", 3);
    assert.equal((await connector.replicas("aggregated")).desired, 3);
    await until("two more workers' start", ready(3));
    const url = frontend.url;
    await until("the frontend seeing 3 workers", async () => (await waitForInstances(url, 3, 100)).length === 3);

    const removed = connector.workers("aggregated").slice(1);
    const removedIds = new Set(removed.flatMap((w) => w.instanceIds));
    // Scale down while a stream is open on a worker that goes: on a loaded machine the clients may
    // still be in requests that began before the new workers were seen.
    // One that began more than 50 ms ago and is open now: it is in flight when the stop is told.
    await until("a request streaming from a worker about to be removed", async () =>
      [...streaming.values()].some((s) => removedIds.has(s.worker) && Date.now() - s.startedAt > 60),
    );
    const scaledDownAt = Date.now();
    await connector.scale("aggregated", 1);
    assert.deepEqual(await connector.replicas("aggregated"), { desired: 1, ready: 1 });
    const drained = await connector.drained();
    await until("the frontend dropping the drained workers", async () => (await healthInstances(url)).length === 1);
    await new Promise((r) => setTimeout(r, 500));
    stop.done = true;
    await Promise.all(clients);

    const failed = outcomes.filter((o) => o.error !== undefined || o.tokens !== 40 || o.finish !== "length");
    assert.deepEqual(failed, [], "every request streamed all 40 tokens");
    // Requests sent from 50 ms before the stop on may reach a removed worker as it stops taking
    // new ones; the frontend moves those (WORKER_DRAINING, retryable). The earlier ones, in flight
    // when it was told to stop, must end on that worker: a kill would move them too (migration
    // hides a cut from the client), so the frontend's migration count bounds what the drain cut.
    const onRemoved = outcomes.filter((o) => removedIds.has(o.worker));
    const caught = onRemoved.filter((o) => o.startedAt < scaledDownAt - 50 && o.endedAt > scaledDownAt);
    const late = onRemoved.filter((o) => o.startedAt >= scaledDownAt - 50);
    assert.ok(caught.length > 0, "some requests were in flight on the removed workers when they were told to stop");
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const migrations = Number(/^armature_frontend_model_migration_total\{[^}]*\} (\d+)/m.exec(metrics)?.[1] ?? 0);
    assert.ok(migrations <= late.length, `${migrations} requests moved, only ${late.length} could have met a stopping worker`);
    assert.deepEqual(
      drained.map((e) => [e.name, e.code, e.signal, e.requested, e.killed]).sort(),
      removed.map((w) => [w.name, 0, null, true, false]).sort(),
      lines.join("\n"),
    );
    assert.ok(!lines.some((l) => /Error|UNAVAILABLE/.test(l)), lines.join("\n"));
  } finally {
    stop.done = true;
    await Promise.all(clients);
    await frontend?.stop();
    await connector.close();
  }
  assert.deepEqual(
    exits.map((e) => e.code),
    [0, 0, 0],
    "the last worker too",
  );
});
