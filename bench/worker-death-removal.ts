// How long a dead worker stays in routing: a mocker worker process registered in etcd (lease TTL
// 10 s) is stopped — SIGKILL (the lease must expire) or SIGTERM (it revokes its lease) — and this
// process times the discovery watch's removal event. Usage: node --import tsx bench/worker-death-removal.ts [kills]
import { connectDistributedRuntime } from "../src/runtime/index.js";
import { startEtcd } from "../test/helpers/etcd-server.js";
import { startNatsServer } from "../test/helpers/nats-server.js";
import { machine, spawnServer } from "./load/processes.js";

const kills = Number(process.argv[2] ?? 3);
const [nats, etcd] = await Promise.all([startNatsServer(), startEtcd()]);
const runtime = await connectDistributedRuntime({ bus: nats.url, discovery: `etcd://${etcd.endpoint}` });
const removedAt = new Map<string, number>();
const present = new Set<string>();
runtime.discovery.watch((event) => {
  if (event.type === "instance-added") present.add(event.instance.id);
  else removedAt.set(event.instanceId, performance.now());
});
console.log(`worker death to removal from routing — ${machine()}, etcd 3.4, lease TTL 10 s\n`);
console.log("| signal | run | seconds from signal to removal |");
console.log("|---|---:|---:|");
try {
  for (const signal of ["SIGKILL", "SIGTERM"] as const) {
    for (let run = 1; run <= (signal === "SIGKILL" ? kills : 2); run++) {
      const worker = await spawnServer(
        [
          "bin/armature.js",
          "worker",
          "--bus",
          nats.url,
          "--discovery",
          `etcd://${etcd.endpoint}`,
          "--engine",
          "mocker",
          "--log-level",
          "warn",
        ],
        /armature worker (\S+)/,
      );
      while (present.size === 0 || [...present].every((p) => removedAt.has(p))) await new Promise((r) => setTimeout(r, 20));
      const workerId = [...present].find((p) => !removedAt.has(p)) as string;
      const t0 = performance.now();
      worker.child.kill(signal);
      while (!removedAt.has(workerId)) await new Promise((r) => setTimeout(r, 10));
      console.log(`| ${signal} | ${run} | ${(((removedAt.get(workerId) as number) - t0) / 1000).toFixed(2)} |`);
      await worker.stop();
    }
  }
} finally {
  await runtime.close();
  await Promise.all([nats.stop(), etcd.stop()]);
}
