import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loadClusterFile, toFlags } from "./cluster-file.js";

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

test("cluster files that cannot run are refused with the key at fault", async () => {
  const cases: [string, RegExp][] = [
    ["etcd: { port: 2379 }\nworkers: [{ engine: mocker }]\n", /nats:/],
    ["nats: { port: 4222 }\netcd: { port: 2379 }\nworkers: []\n", /workers: needs at least one entry/],
    ["nats: { port: 4222 }\netcd: { port: 2379 }\nfrontend: { router: remote }\nworkers: [{ engine: mocker }]\n", /routers:/],
    ["nats: { port: 4222 }\netcd: { port: 2379 }\nrouters: [1]\nworkers: [{ engine: mocker }]\n", /routers: must be a mapping/],
  ];
  for (const [text, message] of cases) {
    await assert.rejects(loadClusterFile(await file(text)), (error: Error & { code?: string }) => {
      assert.equal(error.code, "CONFIG_INVALID");
      assert.match(error.message, message);
      return true;
    });
  }
});
