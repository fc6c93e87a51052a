import { type Engine, MockerEngine } from "../../src/engines/index.js";
import { silentLogger } from "../../src/observability/index.js";
import type { WorkerRole } from "../../src/protocol/index.js";
import { leastLoadedPolicy, Router } from "../../src/router/index.js";
import { createEmbeddedRuntime } from "../../src/runtime/index.js";
import { WorkerHost } from "../../src/worker/index.js";

/** A worker of a pooling test: its engine's `embed` and `rank`, written by hand (the mocker has neither). */
export interface PoolingWorker {
  readonly id: string;
  readonly role?: WorkerRole;
  readonly embed?: Engine["embed"];
  readonly rank?: Engine["rank"];
}

/** A mocker for everything else, with `embed` and `rank` as given. */
function engineWith(worker: PoolingWorker): Engine {
  const base = new MockerEngine({ speedupRatio: 200 });
  return {
    info: base.info,
    generate: (request, options) => base.generate(request, options),
    onKvEvents: (listener) => base.onKvEvents(listener),
    load: () => base.load(),
    dumpKvEvents: () => base.dumpKvEvents(),
    close: () => base.close(),
    ...(worker.embed ? { embed: worker.embed } : {}),
    ...(worker.rank ? { rank: worker.rank } : {}),
  };
}

/**
 * Worker hosts of model `m` around those engines and a least-loaded router, on one embedded
 * runtime: the real worker host, request plane and router in one process.
 */
export async function poolingCluster(workers: readonly PoolingWorker[]) {
  const runtime = createEmbeddedRuntime();
  const hosts = await Promise.all(
    workers.map((w) =>
      WorkerHost.create({ runtime, engine: engineWith(w), id: w.id, role: w.role, modelName: "m", logger: silentLogger }),
    ),
  );
  const router = new Router({ runtime, policy: leastLoadedPolicy(), logger: silentLogger });
  return {
    runtime,
    router,
    hosts,
    async close() {
      router.close();
      await Promise.all(hosts.map((h) => h.close(100)));
      await runtime.close();
    },
  };
}
