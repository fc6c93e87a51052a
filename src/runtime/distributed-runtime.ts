import { connect } from "@nats-io/transport-node";
import { Etcd3 } from "etcd3";
import { ArmatureError } from "../protocol/index.js";
import { RealClock } from "./clock.js";
import type { Runtime } from "./embedded-runtime.js";
import { EtcdDiscovery } from "./etcd/etcd-discovery.js";
import { type InvalidMessageListener, InvalidMessages } from "./invalid-messages.js";
import { NatsDurableEventLog } from "./nats/nats-durable-event-log.js";
import { NatsEventPlane } from "./nats/nats-event-plane.js";
import { NatsRequestPlane } from "./nats/nats-request-plane.js";

export interface DistributedRuntimeOptions {
  /** `nats://host:port`: requests and events. */
  readonly bus: string;
  /** `etcd://host:port`: discovery. */
  readonly discovery: string;
  readonly onError?: (error: unknown, where: string) => void;
  /** Told of each malformed message dropped (the CLI logs them). */
  readonly onInvalidMessage?: InvalidMessageListener;
  /** Keep KV events in a JetStream stream (nats-server needs -js). */
  readonly durableKvEvents?: boolean;
}

/** The stream that keeps workers' KV events with `--durable-kv-events`, for an hour. */
export const KV_EVENTS_STREAM = { stream: "ARMATURE_KV_EVENTS", subjects: ["armature.kv_events.*"], maxAgeMs: 3_600_000 };

/** The same planes over NATS and etcd, for components in separate processes and hosts. */
export async function connectDistributedRuntime(options: DistributedRuntimeOptions): Promise<Runtime> {
  const busUrl = new URL(options.bus);
  const discoveryUrl = new URL(options.discovery);
  if (busUrl.protocol !== "nats:")
    throw new ArmatureError("CONFIG_INVALID", `--bus must be nats://HOST:PORT, got ${options.bus}`);
  if (discoveryUrl.protocol !== "etcd:") {
    throw new ArmatureError("CONFIG_INVALID", `--discovery must be etcd://HOST:PORT, got ${options.discovery}`);
  }
  const onError = options.onError ?? (() => {});
  const invalidMessages = new InvalidMessages(options.onInvalidMessage);
  let nc: Awaited<ReturnType<typeof connect>>;
  try {
    nc = await connect({ servers: busUrl.host, maxReconnectAttempts: -1 });
  } catch (cause) {
    throw new ArmatureError("CONFIG_INVALID", `cannot reach NATS at ${options.bus}: is nats-server running there? (--bus)`, {
      cause,
    });
  }
  const etcd = new Etcd3({ hosts: discoveryUrl.host });
  const discovery = new EtcdDiscovery(etcd, { onError: (e) => onError(e, "discovery"), invalidMessages });
  try {
    await discovery.list();
  } catch (cause) {
    await nc.close();
    etcd.close();
    throw new ArmatureError("CONFIG_INVALID", `cannot reach etcd at ${options.discovery}: is etcd running there? (--discovery)`, {
      cause,
    });
  }
  let kvEventLog: NatsDurableEventLog | undefined;
  if (options.durableKvEvents) {
    try {
      kvEventLog = await NatsDurableEventLog.open(nc, KV_EVENTS_STREAM);
    } catch (error) {
      await nc.close();
      etcd.close();
      throw error;
    }
  }
  const requests = new NatsRequestPlane(nc);
  // Consumers check what they receive, so what still throws here is a message that is not even
  // JSON: dropped and counted like any other malformed message.
  const events = new NatsEventPlane(nc, { onHandlerError: (e, subject) => invalidMessages.record("undecodable", subject, e) });
  return {
    clock: new RealClock(),
    discovery,
    requests,
    events,
    kvEventLog,
    invalidMessages,
    async close() {
      await requests.close();
      await discovery.close();
      await nc.drain();
      etcd.close();
    },
  };
}
