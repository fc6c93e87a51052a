import { Frontend, type FrontendOptions } from "../frontend/index.js";
import { createTracing, type Logger, PrometheusMeter } from "../observability/index.js";
import { ArmatureError, isArmatureError, type ModelCard } from "../protocol/index.js";
import { type BasicPolicyName, createBasicPolicy, type Router, remoteSelector, startRoutingStack } from "../router/index.js";
import type { Runtime } from "../runtime/index.js";
import { createApiAccess } from "./api-access.js";
import { batchPlace } from "./batch-place.js";
import { readHttpsCredentials, reloadHttpsOnHangup } from "./https-credentials.js";
import type { ServeOptions } from "./serve-options.js";
import { TrafficReporter } from "./traffic-reporter.js";

export interface FrontendStack {
  readonly frontend: Frontend;
  readonly router: Router;
  /** Drains HTTP, then stops routing. */
  close(graceMs?: number): Promise<void>;
}

/**
 * The router (policy chosen from the flags and the workers' cards) and the HTTP frontend on a
 * runtime. `cards` are the workers known at start; the KV index takes its block size from them
 * unless `--block-size` says otherwise.
 */
export async function startFrontend(
  options: ServeOptions,
  runtime: Runtime,
  logger: Logger,
  cards: readonly ModelCard[],
  routerId: string,
  /**
   * Share bookings with other router replicas over the event plane, and publish a traffic report
   * every second for `armature planner` (neither is needed in one process).
   */
  shareLoad = true,
  /** Where `/metrics` reads from; workers in the same process add theirs to it. */
  meter = new PrometheusMeter(),
  /**
   * A planner's hooks: its state for `GET /v1/planner`, the requests it reads, and the models it
   * may scale to zero (kept served while they have no worker).
   */
  plannerHooks: Pick<FrontendOptions, "plannerState" | "onRequestFinished" | "onRequestStarted"> & {
    readonly keptModels?: readonly string[];
  } = {},
): Promise<FrontendStack> {
  const { keptModels = [], ...planner } = plannerHooks;
  const apiAccess = createApiAccess(options, meter);
  // Bad certificate files stop the start here, naming the flag, before anything listens.
  const tls = options.tls ? readHttpsCredentials(options.tls) : undefined;
  // KV routing by default: from the workers' KV events where they all publish them, else from the
  // router's own decisions (llama-server publishes none). The mocker and llama.cpp both publish.
  const silent = cards.some((c) => !c.publishesKvEvents);
  const routerName = options.router ?? (cards.length > 0 && (!silent || cards.some((c) => c.engineUrl)) ? "kv" : "round-robin");
  const routing = startRoutingStack({
    runtime,
    logger,
    routerId,
    // Bookings go to every replica (and to armature router processes) over the event plane.
    shareLoad,
    index: routerName !== "kv" ? undefined : options.kvEvents && !silent ? "events" : "approximate",
    blockSize: options.blockSize ?? cards[0]?.blockSize ?? 16,
    // With a router service, the local policy only decides while the service does not answer.
    basicPolicy: () => createBasicPolicy(routerName === "remote" ? "round-robin" : (routerName as BasicPolicyName)),
    overlapWeight: options.kvOverlapWeight,
    exclusiveFactor: options.kvExclusiveFactor,
    temperature: options.routerTemperature,
    lowerTierWeight: options.lowerTierWeight,
    busy: {
      ...(options.busyDecodeBlocks !== undefined ? { activeDecodeBlocks: options.busyDecodeBlocks } : {}),
      ...(options.busyPrefillFrac !== undefined ? { activePrefillTokensFrac: options.busyPrefillFrac } : {}),
      ...(options.busySequencesFrac !== undefined ? { activeSequencesFrac: options.busySequencesFrac } : {}),
      ...(options.priorityReserve !== undefined ? { priorityReserve: options.priorityReserve } : {}),
      ...(options.routerQueueSize !== undefined ? { queueSize: options.routerQueueSize } : {}),
    },
    remote: routerName === "remote" ? remoteSelector(runtime) : undefined,
    keptModels,
    disaggThreshold: options.disaggThreshold,
    maxPrefillQueue: options.disaggMaxPrefillQueue,
    maxTransferMs: options.disaggMaxTransferMs,
    meter,
  });
  // With kept KV events, route only once the index holds them.
  await routing.ready;
  const { router, indexer } = routing;
  const stopRouting = (): void => routing.close();
  // An `armature planner` process reads the deployment's traffic from every frontend's reports.
  const reporter = shareLoad
    ? new TrafficReporter({ frontendId: routerId, events: runtime.events, clock: runtime.clock, logger })
    : undefined;
  const hooks: typeof planner = reporter
    ? {
        ...planner,
        onRequestStarted: (startedAt, model) => {
          reporter.arrived();
          return planner.onRequestStarted?.(startedAt, model);
        },
        onRequestFinished: (request) => {
          planner.onRequestFinished?.(request);
          reporter.record(request);
        },
      }
    : planner;
  let frontend: Frontend;
  const batches = await batchPlace(options, runtime, logger);
  const tracing = await createTracing({ endpoint: options.otlpEndpoint, serviceName: "armature-frontend", logger });
  try {
    frontend = await Frontend.create({
      router,
      meter,
      kvIndexer: indexer,
      invalidMessages: runtime.invalidMessages,
      logger,
      host: options.host,
      port: options.port,
      grpcPort: options.grpcPort,
      migrationLimit: options.migrationLimit,
      bodyLimitBytes: options.maxBodyBytes,
      batches,
      requestTimeoutMs: options.requestTimeoutMs,
      toolCallParser: options.toolCallParser,
      reasoningParser: options.reasoningParser,
      access: apiAccess?.access,
      tls,
      tracing,
      instanceId: routerId,
      ...hooks,
    });
  } catch (error) {
    await tracing.close();
    await reporter?.close();
    stopRouting();
    if (isArmatureError(error) && error.code === "LISTEN_FAILED") {
      const taken = (error.cause as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE";
      throw new ArmatureError(
        "CONFIG_INVALID",
        taken
          ? `port ${options.port} on ${options.host} is already in use; choose another with --port (ARMATURE_PORT), or 0 for a free one`
          : `${error.message}; check --host and --port (ARMATURE_HOST, ARMATURE_PORT)`,
        { cause: error },
      );
    }
    throw error;
  }
  const stopKeyReloads = apiAccess?.reloadOnHangup(logger);
  const stopTlsReloads = options.tls ? reloadHttpsOnHangup(options.tls, frontend, logger) : undefined;
  return {
    frontend,
    router,
    async close(graceMs = 30_000) {
      stopKeyReloads?.();
      stopTlsReloads?.();
      await frontend.close(graceMs);
      // After the drain, so the last requests' report goes out.
      await reporter?.close();
      stopRouting();
      // After the drain: the last requests' spans go out.
      await tracing.close();
    },
  };
}
