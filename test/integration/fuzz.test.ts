import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { after, before, test } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Etcd3 } from "etcd3";
import OpenAI from "openai";
import { type ServeProcess, startArmature } from "../helpers/armature-process.js";
import { type ClusterServers, startClusterServers, waitForInstances } from "../helpers/cluster-servers.js";
import { type AttackReport, httpAttacks } from "../helpers/fuzz-http-attacks.js";
import { Prng } from "../helpers/fuzz-inputs.js";
import { INSTANCE_PREFIX, injectIntoInboxes, type PlaneTarget, planeAttacks } from "../helpers/fuzz-plane-attacks.js";

// Hostile input at every HTTP route, every plane subject, discovery and the transfer port, for a
// bounded time; every process must stay up, keep serving and never reach its last-resort handler.
// A failure names the seed: ARMATURE_FUZZ_SEED=<seed> replays the same inputs.
const SEED = Number(process.env.ARMATURE_FUZZ_SEED ?? randomInt(2 ** 31));
const SECONDS = Number(process.env.ARMATURE_FUZZ_SECONDS ?? 12);
const LIVENESS_EVERY_MS = 3000;
/** The lines `installLastResortHandlers` writes: each one is a defect. */
const LAST_RESORT = /not handled|not caught|uncaught/i;

let servers: ClusterServers;
before(async () => {
  servers = await startClusterServers();
});
after(() => servers.stop());

interface Processes {
  readonly worker: ServeProcess;
  readonly router: ServeProcess;
  readonly frontend: ServeProcess;
}

test(`fuzz (seed ${SEED}): hostile input leaves every process up and serving`, {
  timeout: SECONDS * 1000 + 180_000,
}, async (t) => {
  t.diagnostic(`seed ${SEED}; replay with ARMATURE_FUZZ_SEED=${SEED} (ARMATURE_FUZZ_SECONDS=${SECONDS})`);
  const cluster = servers.flags;
  const worker = await startArmature(["worker", ...cluster, "--engine", "mocker", "--speedup-ratio", "100"]);
  const router = await startArmature(["router", ...cluster]);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0", "--router", "remote"]);
  const processes: Processes = { worker, router, frontend };
  const nc: NatsConnection = await connect({ servers: servers.nats.url });
  const etcd = new Etcd3({ hosts: servers.etcd.endpoint });
  const etcdKeys = new Set<string>();
  try {
    const [instance] = await waitForInstances(frontend.url, 1);
    assert.ok(instance, "the worker registered");
    const workerRecord = JSON.parse((await etcd.get(`${INSTANCE_PREFIX}${instance.id}`).string()) ?? "{}") as {
      transferAgent: { address: { host: string; port: number } };
    };
    const target: PlaneTarget = {
      nc,
      etcd,
      workerId: instance.id,
      workerRecord,
      transfer: workerRecord.transferAgent.address,
      etcdKeys,
    };
    const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 15_000 });
    await assertServing(processes, client, frontend.url, "before fuzzing");

    const attacks = [
      ...Object.entries(httpAttacks).map(([name, run]) => ({ name, run: (rng: Prng) => run(rng, frontend.url) })),
      ...Object.entries(planeAttacks).map(([name, run]) => ({ name, run: (rng: Prng) => run(rng, target) })),
      { name: "inboxInjection", run: (rng: Prng) => inboxInjection(rng, nc, client) },
    ];
    const history: string[] = [];
    const problems: string[] = [];
    const lastResort: string[] = [];
    const seen = new Map<string, number>(Object.keys(processes).map((name) => [name, 0]));
    const selector = new Prng(SEED);
    const deadline = Date.now() + SECONDS * 1000;
    let nextLiveness = Date.now() + LIVENESS_EVERY_MS;
    let round = 0;
    let cycle: typeof attacks = [];
    const counts = new Map<string, number>();
    while (Date.now() < deadline) {
      round++;
      // Every attack once per cycle, in an order the seed shuffles.
      if (cycle.length === 0) cycle = [...attacks].sort(() => selector.next() - 0.5);
      const attack = cycle.pop() as (typeof attacks)[number];
      counts.set(attack.name, (counts.get(attack.name) ?? 0) + 1);
      const report: AttackReport = await attack.run(new Prng((SEED ^ Math.imul(round, 0x9e3779b1)) >>> 0));
      const line = `#${round} ${attack.name}: ${report.input}`;
      history.push(line);
      for (const problem of report.problems) problems.push(`${line}\n    → ${problem}`);
      lastResort.push(...newLastResortLines(processes, seen, history));
      if (Date.now() >= nextLiveness) {
        await assertServing(processes, client, frontend.url, `after ${history.slice(-5).join("\n")}`);
        nextLiveness = Date.now() + LIVENESS_EVERY_MS;
      }
    }
    t.diagnostic(`${round} attacks: ${[...counts].map(([name, n]) => `${name} ${n}`).join(", ")}`);
    await new Promise((r) => setTimeout(r, 500)); // late log lines of the last attacks
    lastResort.push(...newLastResortLines(processes, seen, history));
    await assertServing(processes, client, frontend.url, "at the end");

    assert.deepEqual(lastResort, [], `seed ${SEED}: a process reached its last-resort handler`);
    assert.deepEqual(problems, [], `seed ${SEED}: HTTP answers a sound server would not give`);
    const dropped = await droppedMessages(frontend.url);
    t.diagnostic(`frontend dropped plane messages: ${[...dropped].map(([kind, n]) => `${kind} ${n}`).join(", ")}`);
    for (const [name, process] of Object.entries(processes)) {
      const kinds = new Set(
        [...process.output().matchAll(/"kind":"([^"]+)"[^\n]*dropped a malformed message/g)].map((m) => m[1]),
      );
      t.diagnostic(`${name} logged drops of: ${[...kinds].join(", ")}`);
    }
    assert.ok(
      [...dropped.values()].some((n) => n > 0),
      `the frontend counted no dropped plane message: ${[...dropped]}`,
    );
    for (const [name, process] of Object.entries(processes)) {
      assert.match(process.output(), /dropped a malformed message/, `${name} logged no dropped plane message`);
    }
  } finally {
    await Promise.all(
      [...etcdKeys].map((key) =>
        etcd
          .delete()
          .key(key)
          .catch(() => {}),
      ),
    );
    etcd.close();
    await nc.close();
    // Bounded: a process that does not exit on SIGTERM is named, then killed.
    const exits = await Promise.all(Object.entries(processes).map(([name, p]) => stopWithin(name, p, 10_000)));
    for (const exit of exits) t.diagnostic(exit);
  }
});

async function stopWithin(name: string, process: ServeProcess, ms: number): Promise<string> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    process.stop("SIGTERM"),
    new Promise<"hung">((resolve) => {
      timer = setTimeout(() => resolve("hung"), ms);
    }),
  ]);
  clearTimeout(timer);
  if (code !== "hung") return `${name} exited with ${code} ${Date.now() - started} ms after SIGTERM`;
  await process.stop("SIGKILL");
  return `${name} did not exit within ${ms} ms of SIGTERM and was killed`;
}

/** Every process alive, `/health` answers, and a streamed chat completion through the openai client yields tokens. */
async function assertServing(processes: Processes, client: OpenAI, url: string, when: string): Promise<void> {
  for (const [name, process] of Object.entries(processes)) {
    const { child } = process;
    assert.ok(
      child.exitCode === null && child.signalCode === null && child.pid !== undefined,
      `seed ${SEED}: the ${name} process exited (${child.exitCode ?? child.signalCode}) ${when}\n${process.output().slice(-3000)}`,
    );
  }
  const health = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) });
  assert.equal(health.status, 200, `seed ${SEED}: /health ${when}`);
  await health.body?.cancel();
  let content = "";
  const stream = await client.chat.completions.create(
    {
      model: "armature-mocker",
      messages: [{ role: "user", content: "still serving?" }],
      max_tokens: 6,
      stream: true,
    },
    { signal: AbortSignal.timeout(15_000) },
  );
  for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? "";
  assert.ok(content.length > 0, `seed ${SEED}: the liveness completion streamed no tokens ${when}`);
}

/** Lines the processes wrote since the last look that come from the last-resort handlers, with the inputs just before. */
function newLastResortLines(processes: Processes, seen: Map<string, number>, history: readonly string[]): string[] {
  const found: string[] = [];
  for (const [name, process] of Object.entries(processes)) {
    const output = process.output();
    const fresh = output.slice(seen.get(name) ?? 0);
    seen.set(name, output.length);
    for (const line of fresh.split("\n").filter((l: string) => LAST_RESORT.test(l))) {
      found.push(`${name}: ${line.slice(0, 2000)}\n  after: ${history.slice(-3).join("\n         ")}`);
    }
  }
  return found;
}

/** A completion whose call streams get malformed messages injected; it must end, never hang. */
async function inboxInjection(rng: Prng, nc: NatsConnection, client: OpenAI): Promise<AttackReport> {
  const stream = rng.chance(0.5);
  const victim = (async (): Promise<string> => {
    try {
      if (!stream) {
        await client.chat.completions.create(
          { model: "armature-mocker", messages: [{ role: "user", content: "victim" }], max_tokens: 8 },
          { signal: AbortSignal.timeout(20_000) },
        );
        return "completed";
      }
      const chunks = await client.chat.completions.create(
        {
          model: "armature-mocker",
          messages: [{ role: "user", content: "victim" }],
          max_tokens: 8,
          stream: true,
        },
        { signal: AbortSignal.timeout(20_000) },
      );
      for await (const _ of chunks);
      return "streamed";
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (
        error instanceof OpenAI.APIConnectionTimeoutError ||
        (error as Error).name === "AbortError" ||
        (error as Error).name === "TimeoutError"
      )
        return "timeout";
      return `failed with ${status ?? (error as Error).message}`;
    }
  })();
  const injected = await injectIntoInboxes(rng, nc, victim);
  const outcome = await victim;
  return {
    input: `${stream ? "streamed" : "unary"} completion with ${injected.length} injected stream messages (${injected.slice(0, 3).join(", ")})`,
    problems: outcome === "timeout" ? ["the completion hung after malformed stream messages"] : [],
  };
}

async function droppedMessages(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const counts = new Map<string, number>();
  for (const match of text.matchAll(/^armature_plane_messages_dropped\{kind="([^"]+)"\} (\S+)$/gm)) {
    counts.set(match[1] as string, Number(match[2]));
  }
  return counts;
}
