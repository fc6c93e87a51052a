import { resolveServeOptions } from "../../src/cli/serve-options.js";
import { startWorkers } from "../../src/cli/start-workers.js";
import { silentLogger } from "../../src/observability/index.js";
import { createEmbeddedRuntime } from "../../src/runtime/index.js";

/**
 * Starts, in this process, the workers `armature serve ARGS` would start, and resolves to the
 * message of the refusal that stopped them (what serve prints after `armature: `), or `started`
 * (the workers are then stopped). A refusal at start needs no process of its own to be seen.
 */
export async function workersRefusal(args: readonly string[]): Promise<string> {
  const runtime = createEmbeddedRuntime();
  try {
    const { workers } = await startWorkers(resolveServeOptions(args, {}), runtime, silentLogger);
    await Promise.all(workers.map((w) => w.close(0)));
    return "started";
  } catch (error) {
    return (error as Error).message;
  } finally {
    await runtime.close();
  }
}
