import assert from "node:assert/strict";
import { mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { ensureTinyModel } from "../../src/engines/index.js";
import { startArmature } from "../helpers/armature-process.js";
import { type ClusterServers, healthInstances, startClusterServers, waitForInstances } from "../helpers/cluster-servers.js";

// Frontend and workers as separate processes over a real nats-server and etcd.
let servers: ClusterServers;

before(async () => {
  servers = await startClusterServers();
});
after(() => servers.stop());

test("a frontend process serves the OpenAI API through worker processes found in etcd, over NATS", async () => {
  const cluster = servers.flags;
  const workerA = await startArmature(["worker", ...cluster, "--engine", "mocker", "--speedup-ratio", "100"]);
  const workerB = await startArmature(["worker", ...cluster, "--engine", "mocker", "--speedup-ratio", "100"]);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0", "--router", "round-robin"]);
  try {
    const ids = (await waitForInstances(frontend.url, 2)).map((i) => i.id).sort();
    assert.equal(ids.length, 2);
    const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const served = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const stream = await client.chat.completions
        .create({ model: "armature-mocker", messages: [{ role: "user", content: `hello ${i}` }], max_tokens: 5, stream: true })
        .withResponse();
      served.add(stream.response.headers.get("x-armature-worker") ?? "");
      let chunks = 0;
      for await (const _ of stream.data) chunks++;
      assert.ok(chunks >= 2);
    }
    assert.deepEqual([...served].sort(), ids, "both worker processes served");

    // A worker stopped with SIGTERM deregisters; the frontend keeps serving with the other.
    assert.equal(await workerA.stop("SIGTERM"), 0);
    const gone = Date.now() + 10_000;
    while ((await healthInstances(frontend.url)).length > 1 && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
    assert.equal((await healthInstances(frontend.url)).length, 1);
    const after = await client.chat.completions.create({
      model: "armature-mocker",
      messages: [{ role: "user", content: "still there?" }],
      max_tokens: 3,
    });
    assert.equal(after.choices.length, 1);
  } finally {
    await Promise.all([frontend.stop(), workerA.stop(), workerB.stop()]);
  }
});

test("a worker killed with SIGKILL mid-stream: the stream moves to another worker, and the dead one leaves routing", async () => {
  const cluster = servers.flags;
  const workerA = await startArmature(["worker", ...cluster, "--engine", "mocker", "--speedup-ratio", "2"]);
  const workerB = await startArmature(["worker", ...cluster, "--engine", "mocker", "--speedup-ratio", "2"]);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0", "--router", "round-robin"]);
  try {
    await waitForInstances(frontend.url, 2);
    const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const { data: stream, response } = await client.completions
      .create({
        model: "armature-mocker",
        prompt: "hello",
        max_tokens: 60,
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    const servedBy = response.headers.get("x-armature-worker");
    const victim = workerA.output().includes(servedBy ?? "?") ? workerA : workerB;
    let chunks = 0;
    let usage: { completion_tokens: number } | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      if (++chunks === 3) victim.child.kill("SIGKILL");
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(finish, "length");
    assert.equal(usage?.completion_tokens, 60, "one uninterrupted stream of max_tokens tokens");
    // The dead worker's lease (10 s) runs out and it leaves routing.
    const gone = Date.now() + 15_000;
    while ((await healthInstances(frontend.url)).some((i) => i.id === servedBy) && Date.now() < gone) {
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(!(await healthInstances(frontend.url)).some((i) => i.id === servedBy));
  } finally {
    await Promise.all([frontend.stop(), workerA.stop(), workerB.stop()]);
  }
});

test("workers of two models share one frontend, each model routed on its own block size; a model whose last worker leaves is model_not_found until one registers again", async () => {
  const cluster = [...servers.flags, "--engine", "mocker", "--speedup-ratio", "100"];
  const alpha = await startArmature(["worker", ...cluster, "--model-name", "alpha"]);
  // The frontend starts on alpha's card alone (16-token blocks); beta comes later with 32.
  const frontend = await startArmature(["frontend", ...servers.flags, "--port", "0"]);
  let beta = await startArmature(["worker", ...cluster, "--model-name", "beta", "--block-size", "32"]);
  const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const models = async (): Promise<string[]> => (await client.models.list()).data.map((m) => m.id).sort();
  const until = async (want: string[]): Promise<void> => {
    const deadline = Date.now() + 10_000;
    while (JSON.stringify(await models()) !== JSON.stringify(want) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await models(), want);
  };
  const ask = (model: string) => client.completions.create({ model, prompt: "hi", max_tokens: 2 });
  try {
    await until(["alpha", "beta"]);
    assert.equal((await ask("beta")).model, "beta");
    // beta's 32-token blocks reach the KV index although the frontend met alpha's 16-token ones first.
    const long = await client.completions.create({ model: "beta", prompt: "hello world ".repeat(20), max_tokens: 2 });
    assert.equal(long.usage?.prompt_tokens, 240);
    type Fleet = { workers: { model: string; kv: { blockSize: number; indexedBlocks: { device?: number } | null } }[] };
    const betaKv = async () =>
      ((await (await fetch(`${frontend.url}/v1/fleet`)).json()) as Fleet).workers.find((w) => w.model === "beta")?.kv;
    const deadline = Date.now() + 10_000;
    while (((await betaKv())?.indexedBlocks?.device ?? 0) === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await betaKv(), { ...(await betaKv()), blockSize: 32, indexedBlocks: { device: 7 } });
    assert.equal(await beta.stop("SIGTERM"), 0);
    await until(["alpha"]);
    await assert.rejects(
      ask("beta"),
      (error: InstanceType<typeof OpenAI.APIError>) => error.status === 404 && error.code === "model_not_found",
    );
    assert.equal((await ask("alpha")).model, "alpha");
    beta = await startArmature(["worker", ...cluster, "--model-name", "beta"]);
    await until(["alpha", "beta"]);
    assert.equal((await ask("beta")).model, "beta");
  } finally {
    await Promise.all([frontend.stop(), alpha.stop(), beta.stop()]);
  }
});

test("a frontend process on a host without the worker's model file gets its tokenizer from the worker, over NATS", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-remote-tokenizer-"));
  const model = await ensureTinyModel(dir);
  // The worker reads its model through a path the frontend will not find (another host's disk).
  const link = join(dir, "on-the-worker-host.gguf");
  await symlink(model, link);
  const cluster = servers.flags;
  const worker = await startArmature(["worker", ...cluster, "--model", link]);
  let frontend: Awaited<ReturnType<typeof startArmature>> | undefined;
  try {
    await rm(link);
    frontend = await startArmature(["frontend", ...cluster, "--port", "0"], { ARMATURE_CACHE_DIR: join(dir, "cache") });
    await waitForInstances(frontend.url, 1);
    const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const response = await client.chat.completions.create({
      model: "on-the-worker-host",
      messages: [{ role: "user", content: "Hello" }],
      max_tokens: 4,
      temperature: 0,
    });
    assert.ok((response.usage?.prompt_tokens ?? 0) > 0);
    assert.equal((await readdir(join(dir, "cache", "tokenizers"))).length, 1);
  } finally {
    await Promise.all([frontend?.stop(), worker.stop()]);
  }
});
