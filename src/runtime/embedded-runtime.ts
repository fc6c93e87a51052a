import type { NatsConnection } from "@nats-io/transport-node";
import { type Clock, RealClock } from "./clock.js";
import type { Discovery } from "./discovery.js";
import type { DurableEventLog } from "./durable-event-log.js";
import type { EventPlane } from "./event-plane.js";
import { type InvalidMessageListener, InvalidMessages } from "./invalid-messages.js";
import { MemoryDiscovery } from "./memory/memory-discovery.js";
import { MemoryEventPlane } from "./memory/memory-event-plane.js";
import { MemoryRequestPlane } from "./memory/memory-request-plane.js";
import type { RequestPlane } from "./request-plane.js";

/** The planes a component is built against, whatever binds them. */
export interface Runtime {
  readonly clock: Clock;
  readonly discovery: Discovery;
  readonly requests: RequestPlane;
  readonly events: EventPlane;
  /** Kept KV events (`--durable-kv-events`): a router that starts late reads them instead of asking workers. */
  readonly kvEventLog?: DurableEventLog | undefined;
  /** Where consumers check what they receive; malformed messages are counted here and dropped. */
  readonly invalidMessages: InvalidMessages;
  /** The NATS connection of a distributed runtime (object stores on the bus live on it). */
  readonly busConnection?: NatsConnection | undefined;
  close(): Promise<void>;
}

/** Everything in one process, no infrastructure: the default of `armature serve`. */
export function createEmbeddedRuntime(
  options: {
    clock?: Clock;
    onEventHandlerError?: (e: unknown, subject: string) => void;
    onInvalidMessage?: InvalidMessageListener;
    /**
     * Every message on these planes is an object built in this process (`armature serve`, a
     * replay): hand them on unchecked. Default false (tests that feed the planes malformed
     * messages keep the checks).
     */
    inProcess?: boolean;
  } = {},
): Runtime {
  const clock = options.clock ?? new RealClock();
  const discovery = new MemoryDiscovery({ clock });
  const requests = new MemoryRequestPlane();
  const events = new MemoryEventPlane(options.onEventHandlerError ? { onHandlerError: options.onEventHandlerError } : {});
  return {
    clock,
    discovery,
    requests,
    events,
    invalidMessages: new InvalidMessages(options.onInvalidMessage, { inProcess: options.inProcess === true }),
    async close() {
      await Promise.all([discovery.close(), requests.close(), events.close()]);
    },
  };
}
