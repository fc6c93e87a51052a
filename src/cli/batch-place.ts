import { hostname } from "node:os";
import { join } from "node:path";
import { defaultCacheDir } from "../engines/index.js";
import { ObjectBatchStore, type RunnerLock } from "../frontend/batches/object-batch-store.js";
import type { BatchOptions } from "../frontend/index.js";
import type { Logger } from "../observability/index.js";
import type { Lease, Runtime } from "../runtime/index.js";
import { openObjectStore } from "../transfer/index.js";
import type { ServeOptions } from "./serve-options.js";

/** The claim in discovery held by the frontend that runs the batches of an object store. */
export const BATCH_RUNNER_CLAIM = "batch-runner";
/** How long the claim outlives a runner that died: another frontend may take over after this. */
const CLAIM_TTL_MS = 10_000;

/**
 * Where the Files and Batch APIs keep their state: `--batch-dir` when given; else the KV block
 * manager's object store (`--kv-object-store`) when one is set, under `batches/`, so batches survive
 * the host as the KV blocks do; else `~/.cache/armature/batches`. Undefined: the APIs are off.
 */
export async function batchPlace(options: ServeOptions, runtime: Runtime, logger: Logger): Promise<BatchOptions | undefined> {
  const settings = options.batches;
  if (!settings) return undefined;
  const { concurrency, maxFileBytes } = settings;
  if (settings.dir === undefined && options.kvObjectStore !== undefined) {
    const store = await openObjectStore(options.kvObjectStore, { nats: runtime.busConnection });
    const batches = new ObjectBatchStore(store, claimedRunnerLock(runtime, `${hostname()}/${process.pid}`, logger));
    logger.info({ store: batches.location }, "files and batches are kept in the KV object store (--kv-object-store)");
    return { place: { store: batches }, concurrency, maxFileBytes };
  }
  return { place: { dir: settings.dir ?? join(defaultCacheDir(), "batches") }, concurrency, maxFileBytes };
}

/**
 * A runner lock that is a claim in discovery (etcd across hosts, the process's own store in one),
 * renewed every third of its TTL while held: when its holder dies, the claim lapses.
 */
export function claimedRunnerLock(runtime: Runtime, holder: string, logger: Logger): RunnerLock {
  let lease: Lease | undefined;
  let renewal: NodeJS.Timeout | undefined;
  return {
    async acquire() {
      if (lease) return true;
      lease = await runtime.discovery.claim(BATCH_RUNNER_CLAIM, holder, { ttlMs: CLAIM_TTL_MS });
      if (!lease) return false;
      const held = lease;
      renewal = setInterval(() => {
        held.keepAlive().then(
          (alive) => {
            if (!alive) logger.warn({ holder }, "the batch runner's claim lapsed; another frontend may run the batches now");
          },
          (error: unknown) => logger.warn({ err: (error as Error).message }, "the batch runner's claim could not be renewed"),
        );
      }, CLAIM_TTL_MS / 3);
      renewal.unref();
      return true;
    },
    async release() {
      clearInterval(renewal);
      const held = lease;
      lease = undefined;
      await held?.revoke().catch(() => undefined);
    },
  };
}
