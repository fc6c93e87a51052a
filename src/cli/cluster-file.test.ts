import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loadClusterFile, toFlags } from "./cluster-file.js";
import { type ClusterPlanner, plannerArgs } from "./cluster-planner.js";

async function file(text: string): Promise<string> {
  const path = join(await mkdtemp(join(tmpdir(), "armature-cluster-")), "cluster.yaml");
  await writeFile(path, text);
  return path;
}

test("a cluster file with routers reads, and entries become flags", async () => {
  const cluster = await loadClusterFile(
    await file(
      "nats: { port: 4222 }\netcd: { port: 2379 }\nfrontend: { router: remote }\nrouters: { count: 2, kv-overlap-weight: 8 }\nworkers:\n  - engine: mocker\n    role: decode\n",
    ),
  );
  assert.equal(cluster.routers?.count, 2);
  assert.deepEqual(toFlags(cluster.routers ?? {}), ["--kv-overlap-weight", "8"]);
  assert.deepEqual(toFlags(cluster.workers[0] ?? {}), ["--engine", "mocker", "--role", "decode"]);
});

test("a worker's engine-command stays out of its flags", async () => {
  const cluster = await loadClusterFile(
    await file(
      "nats: { port: 4222 }\netcd: { port: 2379 }\nworkers:\n  - engine: llama-server\n    engine-url: http://127.0.0.1:8080\n    engine-command: llama-server --model m.gguf --port 8080\n",
    ),
  );
  assert.equal(cluster.workers[0]?.["engine-command"], "llama-server --model m.gguf --port 8080");
  assert.deepEqual(toFlags(cluster.workers[0] ?? {}), ["--engine", "llama-server", "--engine-url", "http://127.0.0.1:8080"]);
});

test("cluster files that cannot run are refused with the key at fault", async () => {
  const cases: [string, RegExp][] = [
    ["etcd: { port: 2379 }\nworkers: [{ engine: mocker }]\n", /nats:/],
    ["nats: { port: 4222 }\netcd: { port: 2379 }\nworkers: []\n", /workers: needs at least one entry/],
    ["nats: { port: 4222 }\netcd: { port: 2379 }\nfrontend: { router: remote }\nworkers: [{ engine: mocker }]\n", /routers:/],
    ["nats: { port: 4222 }\netcd: { port: 2379 }\nrouters: [1]\nworkers: [{ engine: mocker }]\n", /routers: must be a mapping/],
    [
      "nats: { port: 4222 }\netcd: { port: 2379 }\nworkers: [{ engine: llama-server, engine-command: llama-server }]\n",
      /workers\[0\]\.engine-command needs engine-url/,
    ],
    [
      "nats: { port: 4222 }\netcd: { port: 2379 }\nworkers: [{ engine: llama-server, engine-url: 'http://h:1', engine-command: '', count: 1 }]\n",
      /workers\[0\]\.engine-command must be a command line/,
    ],
    [
      "nats: { port: 4222 }\netcd: { port: 2379 }\nworkers: [{ engine: llama-server, engine-url: 'http://h:1', engine-command: llama-server, count: 2 }]\n",
      /workers\[0\]\.engine-command starts one engine: give each its own entry, not count: 2/,
    ],
  ];
  for (const [text, message] of cases) {
    await assert.rejects(loadClusterFile(await file(text)), (error: Error & { code?: string }) => {
      assert.equal(error.code, "CONFIG_INVALID");
      assert.match(error.message, message);
      return true;
    });
  }
});

test("a planner: section with no workers: reads, and becomes armature planner's argv", async () => {
  const cluster = await loadClusterFile(
    await file(
      [
        "nats: { port: 4222 }",
        "etcd: { port: 2379 }",
        "planner:",
        "  max-workers: 4",
        "  slo-ttft: 300",
        "  planner-advisory: true",
        "  worker: { engine: mocker, speedup-ratio: 10 }",
      ].join("\n"),
    ),
  );
  assert.deepEqual(cluster.workers, []);
  assert.deepEqual(plannerArgs(cluster.planner as ClusterPlanner), [
    "--connector",
    "local",
    "--max-workers",
    "4",
    "--slo-ttft",
    "300",
    "--planner-advisory",
    "--",
    "--engine",
    "mocker",
    "--speedup-ratio",
    "10",
  ]);
  const split = await loadClusterFile(
    await file(
      "nats: { port: 4222 }\netcd: { port: 2379 }\nplanner:\n  prefill-worker: { engine: mocker }\n  decode-worker: { engine: mocker, role: decode }\n",
    ),
  );
  assert.deepEqual(plannerArgs(split.planner as ClusterPlanner), [
    "--connector",
    "local",
    "--",
    "--role",
    "prefill",
    "--engine",
    "mocker",
    "--",
    "--role",
    "decode",
    "--engine",
    "mocker",
  ]);
});

test("planner: sections that cannot run are refused with the key at fault", async () => {
  const servers = "nats: { port: 4222 }\netcd: { port: 2379 }\n";
  const cases: [string, RegExp][] = [
    ["planner: [1]\n", /planner: must be a mapping/],
    ["planner: { max-workers: 3 }\n", /planner: needs worker:/],
    ["planner: { worker: mocker }\n", /planner: worker: must be a mapping of armature worker flags/],
    ["planner: { worker: { engine: mocker, count: 2 } }\n", /planner: worker: count is the planner's to set/],
    ["planner: { connector: kubernetes, worker: { engine: mocker } }\n", /planner: connector is set by armature up/],
    ["planner: { bus: 'nats://x:1', worker: { engine: mocker } }\n", /planner: bus is set by armature up/],
    ["planner: { prefill-worker: { engine: mocker } }\n", /needs both prefill-worker: and decode-worker:/],
    ["planner: { worker: {}, decode-worker: {} }\n", /not both/],
    ["planner: { slo-ttft: [1], worker: {} }\n", /planner: slo-ttft must be a single value/],
    ["planner: { worker: { engine: mocker } }\nworkers: []\n", /workers: needs at least one entry/],
  ];
  for (const [text, message] of cases) {
    await assert.rejects(loadClusterFile(await file(servers + text)), (error: Error & { code?: string }) => {
      assert.equal(error.code, "CONFIG_INVALID");
      assert.match(error.message, message);
      return true;
    });
  }
});

test("every example cluster file reads", async () => {
  const { readdir } = await import("node:fs/promises");
  const dir = new URL("../../examples/", import.meta.url);
  const names = (await readdir(dir)).filter((name) => name.endsWith(".yaml"));
  assert.ok(names.length >= 4, names.join(", "));
  for (const name of names) await loadClusterFile(new URL(name, dir).pathname);
});
