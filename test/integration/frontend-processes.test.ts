import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, test } from "node:test";
import { startArmature } from "../helpers/armature-process.js";
import { type ClusterServers, startClusterServers, waitForInstances } from "../helpers/cluster-servers.js";
import { letteredPrompt } from "../helpers/routed-completion.js";

// `armature frontend --frontend-processes 2`: two HTTP processes on one port, each with its own
// router replica, kept in sync over the event plane.
let servers: ClusterServers;
before(async () => {
  servers = await startClusterServers();
});
after(() => servers.stop());

const BLOCK = 8;

interface Served {
  readonly frontend: string;
  readonly worker: string;
  readonly overlap: string;
}

/** A one-token completion on a connection of its own (so the kernel may hand it to either process). */
function completion(url: string, prompt: readonly number[], pinned?: string): Promise<Served> {
  const body = JSON.stringify({
    model: "armature-mocker",
    prompt,
    max_tokens: 1,
    ...(pinned ? { nvext: { backend_instance_id: pinned } } : {}),
  });
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v1/completions`,
      { method: "POST", agent: false, headers: { "content-type": "application/json", connection: "close" } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          text += d;
        });
        res.on("end", () => {
          if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}: ${text}`));
          resolve({
            frontend: String(res.headers["x-armature-frontend"] ?? ""),
            worker: String(res.headers["x-armature-worker"] ?? ""),
            overlap: String(res.headers["x-armature-overlap-blocks"] ?? ""),
          });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

test("two frontend processes serve on one port, both take requests, and each routes by the KV events of all", async () => {
  const cluster = servers.flags;
  const mocker = ["--engine", "mocker", "--speedup-ratio", "100", "--block-size", String(BLOCK)];
  const workerA = await startArmature(["worker", ...cluster, ...mocker]);
  const workerB = await startArmature(["worker", ...cluster, ...mocker]);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0", "--frontend-processes", "2"]);
  try {
    const ids = /\(2 processes: (\S+), (\S+)\)/.exec(frontend.output());
    assert.ok(ids, frontend.output());
    const processes = new Set([ids[1], ids[2]]);
    assert.equal(processes.size, 2);
    const [a, b] = (await waitForInstances(frontend.url, 2)).map((w) => w.id) as [string, string];

    const seen = new Set<string>();
    for (let i = 0; i < 20 && seen.size < 2; i++) seen.add((await completion(frontend.url, letteredPrompt("Q", BLOCK))).frontend);
    assert.deepEqual([...seen].sort(), [...processes].sort(), "both processes answer on the one port");

    // A prefix cached on worker a through one process is known to the other process's router.
    const first = await completion(frontend.url, letteredPrompt("ABCD", BLOCK), a);
    await new Promise((r) => setTimeout(r, 500)); // KV events reach every replica over NATS
    let other: Served | undefined;
    for (let i = 0; i < 20 && other === undefined; i++) {
      const served = await completion(frontend.url, letteredPrompt(`ABCD${String.fromCharCode(69 + i)}`, BLOCK));
      if (served.frontend !== first.frontend) other = served;
    }
    assert.ok(other, "a request reached the other process");
    assert.deepEqual({ worker: other.worker, overlap: other.overlap }, { worker: a, overlap: "4" });
    assert.ok([a, b].includes(other.worker));

    assert.equal(await frontend.stop("SIGTERM"), 0, frontend.output());
    assert.match(frontend.output(), /armature frontend stopped/);
  } finally {
    await Promise.all([frontend.stop(), workerA.stop(), workerB.stop()]);
  }
});

test("armature serve refuses --frontend-processes above 1 and says what to run instead", async () => {
  await assert.rejects(
    startArmature(["serve", "--engine", "mocker", "--port", "0", "--frontend-processes", "2"]),
    /--frontend-processes is for armature frontend/,
  );
});
