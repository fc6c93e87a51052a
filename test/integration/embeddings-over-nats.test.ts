import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { type ServeProcess, startArmature, startServe } from "../helpers/armature-process.js";
import { type ClusterServers, startClusterBeside, waitForInstances } from "../helpers/cluster-servers.js";

// POST /v1/embeddings with the frontend and a llama.cpp worker in separate processes, over a real
// nats-server and etcd: the vectors are those `armature serve` (one process) gives for the same model.
const MODEL = "armature-tiny";
let servers: ClusterServers;
let reference: ServeProcess;
let env: NodeJS.ProcessEnv;

before(async () => {
  env = { ARMATURE_CACHE_DIR: await mkdtemp(join(tmpdir(), "armature-embeddings-nats-")) };
  [servers, reference] = await startClusterBeside(() => startServe(["--context-size", "256"], env));
});
after(async () => {
  // Neither is set when the start failed (startClusterBeside stopped what had started).
  await Promise.all([servers?.stop(), reference?.stop()]);
});

async function embed(url: string, input: string[]): Promise<{ vectors: number[][]; worker: string | null }> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
  const { data, response } = await client.embeddings.create({ model: MODEL, input }).withResponse();
  assert.deepEqual(
    data.data.map((d) => d.index),
    input.map((_, i) => i),
  );
  return { vectors: data.data.map((d) => d.embedding), worker: response.headers.get("x-armature-worker") };
}

test("a frontend process embeds through a llama.cpp worker process over NATS, as one process does", async () => {
  const cluster = [...servers.flags, "--context-size", "256"];
  const worker = await startArmature(["worker", ...cluster], env);
  const frontend = await startArmature(["frontend", ...servers.flags, "--port", "0"], env);
  try {
    const [instance] = await waitForInstances(frontend.url, 1);
    // Enough inputs that the answers stream back as many messages.
    const input = Array.from({ length: 300 }, (_, i) => `sentence number ${i}`);
    const remote = await embed(frontend.url, input);
    assert.equal(remote.worker, instance?.id);
    assert.deepEqual(remote.vectors, (await embed(reference.url, input)).vectors);
  } finally {
    await Promise.all([frontend.stop(), worker.stop()]);
  }
});
