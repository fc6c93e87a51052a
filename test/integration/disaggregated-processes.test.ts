import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { type ServeProcess, startArmature, startServe } from "../helpers/armature-process.js";
import { type ClusterServers, startClusterBeside, waitForInstances } from "../helpers/cluster-servers.js";

// Prefill worker, decode worker and frontend as separate processes over nats-server and etcd, with
// the KV moving between the worker processes through their transfer agents.
let servers: ClusterServers;
let reference: ServeProcess;
let env: NodeJS.ProcessEnv;
const MODEL = "armature-tiny";
const prompts = Array.from({ length: 16 }, (_, i) => `Request number ${i} asks about ${["tea", "rain", "maps", "owls"][i % 4]}`);
// Prompt 0 is an assistant turn already at its full stop: the tiny model's first greedy token ends it.
prompts[0] = "<|im_start|>assistant\nRequest number 0 asks about tea.";
let expected: string[];

async function complete(url: string, prompt: string): Promise<{ text: string; prefillWorker: string | null }> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
  const { data, response } = await client.completions
    .create({ model: MODEL, prompt, max_tokens: 20, temperature: 0 })
    .withResponse();
  return { text: data.choices[0]?.text ?? "", prefillWorker: response.headers.get("x-armature-prefill-worker") };
}

before(async () => {
  env = { ARMATURE_CACHE_DIR: await mkdtemp(join(tmpdir(), "armature-disagg-proc-")) };
  [servers, reference] = await startClusterBeside(() => startServe(["--context-size", "256"], env));
  expected = [];
  for (const p of prompts) expected.push((await complete(reference.url, p)).text);
});
after(async () => {
  // Neither is set when the start failed (startClusterBeside stopped what had started).
  await Promise.all([servers?.stop(), reference?.stop()]);
});

test("a prefill worker killed with SIGKILL while requests flow loses none of them", async () => {
  const cluster = [...servers.flags, "--context-size", "256"];
  const prefill = await startArmature(["worker", ...cluster, "--role", "prefill"], env);
  const decode = await startArmature(["worker", ...cluster, "--role", "decode"], env);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0"], env);
  try {
    await waitForInstances(frontend.url, 2);
    // Split across processes, the output is the aggregated one (prompt 0 ends at its first token).
    const first = await complete(frontend.url, prompts[1] as string);
    assert.match(first.prefillWorker ?? "", /^worker-/, "prefilled on the prefill worker process");
    assert.equal(first.text, expected[1]);
    // A prompt whose first greedy token ends generation is answered from the prefill alone.
    assert.equal(expected[0], "");
    assert.deepEqual(await complete(frontend.url, prompts[0] as string), { text: "", prefillWorker: first.prefillWorker });

    const results = prompts.map((p, i) =>
      (async () => {
        await new Promise((r) => setTimeout(r, i * 40));
        return complete(frontend.url, p);
      })(),
    );
    await new Promise((r) => setTimeout(r, 150));
    prefill.child.kill("SIGKILL");
    const answers = await Promise.all(results);
    for (const [i, answer] of answers.entries()) assert.equal(answer.text, expected[i], `request ${i}`);
    assert.ok(
      answers.some((a) => a.prefillWorker === null),
      "requests after the kill were prefilled on the decode worker",
    );
    const metrics = await (await fetch(`${frontend.url}/metrics`)).text();
    assert.match(metrics, /armature_disagg_local_prefill_fallbacks_total\{reason="prefill_failed"\} [1-9]/);
  } finally {
    await Promise.all([frontend.stop(), decode.stop(), prefill.stop()]);
  }
});
