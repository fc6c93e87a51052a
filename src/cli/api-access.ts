import { AccessControl, apiKeysFromFlags, joinKeyLists, readApiKeysFile } from "../frontend/index.js";
import type { Logger, MetricMeter } from "../observability/index.js";
import { ArmatureError, isArmatureError } from "../protocol/index.js";
import type { ServeOptions } from "./serve-options.js";
import { onHangup } from "./signals.js";

/** The frontend's key check, built from `--api-key`, `ARMATURE_API_KEY` and `--api-keys-file`. */
export interface ApiAccess {
  readonly access: AccessControl;
  /**
   * Rereads `--api-keys-file` on every SIGHUP. A file that fails to read or parse keeps the keys in
   * force and logs why (never a key). Returns the function that stops listening.
   */
  reloadOnHangup(logger: Logger): () => void;
}

/**
 * Reads the keys, or returns undefined when none are configured (the API is then open, as before).
 * Throws `CONFIG_INVALID` for a bad keys file, a clash between flag and file keys, or
 * `--metrics-require-key` without keys.
 */
export function createApiAccess(
  options: Pick<ServeOptions, "apiKeys" | "apiKeysFile" | "metricsRequireKey">,
  meter: MetricMeter,
): ApiAccess | undefined {
  const fromFlags = apiKeysFromFlags(options.apiKeys);
  const file = options.apiKeysFile;
  const load = () => joinKeyLists(fromFlags, file ? readApiKeysFile(file) : []);
  const keys = load();
  if (keys.length === 0) {
    if (options.metricsRequireKey) {
      throw new ArmatureError("CONFIG_INVALID", "--metrics-require-key needs API keys: add --api-key or --api-keys-file");
    }
    return undefined;
  }
  const access = new AccessControl({ keys, meter, metricsRequireKey: options.metricsRequireKey });
  return {
    access,
    reloadOnHangup(logger) {
      // Without a file there is nothing to reread: SIGHUP keeps its default meaning.
      if (!file) return () => {};
      const log = logger.child({ component: "api-keys" });
      return onHangup(() => {
        try {
          const next = load();
          access.replaceKeys(next);
          access.countReload("success");
          log.info({ file, keys: next.length }, "API keys reloaded");
        } catch (error) {
          access.countReload("failure");
          const reason = isArmatureError(error) ? error.message : String(error);
          log.error({ file, reason }, "API keys not reloaded; the previous keys stay in force");
        }
      });
    },
  };
}
