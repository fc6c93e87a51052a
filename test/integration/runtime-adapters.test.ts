import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { buildTinyLora, ensureTinyModel } from "../../src/engines/index.js";
import { startArmature } from "../helpers/armature-process.js";
import { type ClusterServers, startClusterServers, waitForInstances } from "../helpers/cluster-servers.js";
import { loraAdmin } from "../helpers/lora-admin.js";
import { until } from "../helpers/poll.js";

// A LoRA adapter loaded at run time stays the fleet's: a llama.cpp worker process that joins
// afterwards (as one the planner adds, or the first after the pool drained to zero) loads it too.
let servers: ClusterServers;

before(async () => {
  servers = await startClusterServers();
});
after(() => servers.stop());

test("a worker that joins after a run-time adapter load loads it too, and serves it; after an unload, a later one does not", async () => {
  const cluster = servers.flags;
  const dir = await mkdtemp(join(tmpdir(), "armature-runtime-lora-"));
  const river = join(dir, "river.gguf");
  await writeFile(river, buildTinyLora({ word: " river" }));
  const model = await ensureTinyModel();
  const worker = () =>
    startArmature(["worker", ...cluster, "--model", `${model}=tiny`, "--sequences", "2", "--context-size", "256"]);
  const first = await worker();
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0"]);
  const joined: Awaited<ReturnType<typeof worker>>[] = [];
  try {
    const [original] = await waitForInstances(frontend.url, 1);
    const load = await loraAdmin(frontend.url, "load", { lora_name: "river", lora_path: river });
    assert.equal(load.status, 200, load.text);
    joined.push(await worker());
    type Fleet = { workers: { id: string; loras: { served: string[] } }[] };
    const fleet = () => fetch(`${frontend.url}/v1/fleet`).then((r) => r.json() as Promise<Fleet>);
    const both = await until(
      "both workers serving river",
      fleet,
      (now) => now.workers.length === 2 && now.workers.every((w) => w.loras.served.includes("river")),
    );
    // The worker that joined answers for the adapter as the first does.
    const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const newcomer = both.workers.find((w) => w.id !== original?.id)?.id;
    const answered = new Set<string>();
    for (let i = 0; i < 6 && answered.size < 2; i++) {
      const { data, response } = await client.chat.completions
        .create({ model: "river", messages: [{ role: "user", content: `Question ${i}, new.` }], max_tokens: 4, temperature: 0 })
        .withResponse();
      assert.equal(data.choices[0]?.message.content, " river".repeat(4));
      answered.add(response.headers.get("x-armature-worker") ?? "");
    }
    assert.ok(newcomer !== undefined && answered.has(newcomer), "the worker that joined served the adapter");

    assert.equal((await loraAdmin(frontend.url, "unload", { lora_name: "river" })).status, 200);
    joined.push(await worker());
    const three = await until("three workers", fleet, (now) => now.workers.length === 3);
    await new Promise((r) => setTimeout(r, 500));
    const later = (await fleet()).workers.filter((w) => !both.workers.some((b) => b.id === w.id));
    assert.equal(three.workers.length, 3);
    assert.deepEqual(
      later.map((w) => w.loras.served),
      [[]],
      "an unloaded adapter is not loaded on a worker that joins after",
    );
  } finally {
    await Promise.all([frontend.stop(), first.stop(), ...joined.map((w) => w.stop())]);
  }
});
