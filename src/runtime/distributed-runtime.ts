import { Etcd3 } from "etcd3";
import { RealClock } from "./clock.js";
import type { Runtime } from "./embedded-runtime.js";
import {
  compileDiscoveryConnection,
  type DiscoverySecurityOptions,
  DiscoveryTimeout,
  explainDiscoveryFailure,
} from "./etcd/etcd-connection.js";
import { EtcdDiscovery } from "./etcd/etcd-discovery.js";
import { type InvalidMessageListener, InvalidMessages } from "./invalid-messages.js";
import { type BusSecurityOptions, compileBusConnection, connectBus } from "./nats/nats-connection.js";
import { NatsDurableEventLog } from "./nats/nats-durable-event-log.js";
import { NatsEventPlane } from "./nats/nats-event-plane.js";
import { NatsRequestPlane, type NatsRequestPlaneOptions } from "./nats/nats-request-plane.js";

export interface DistributedRuntimeOptions {
  /** `nats://[USER:PASSWORD@|TOKEN@]HOST:PORT` (`tls://` or `nats+tls://` for TLS): requests and events. */
  readonly bus: string;
  /** Credentials and TLS files for NATS; they win over the URL's. */
  readonly busSecurity?: BusSecurityOptions;
  /** `etcd://[USER:PASSWORD@]HOST:PORT` (`etcds://` or `https://` for TLS): discovery. */
  readonly discovery: string;
  /** Credentials and TLS files for etcd; they win over the URL's. */
  readonly discoverySecurity?: DiscoverySecurityOptions;
  readonly onError?: (error: unknown, where: string) => void;
  /** Told of each malformed message dropped (the CLI logs them). */
  readonly onInvalidMessage?: InvalidMessageListener;
  /** Keep KV events in a JetStream stream (nats-server needs -js). */
  readonly durableKvEvents?: boolean;
  /** Request-plane timings (heartbeat, idle and progress timeouts, flow-control window). */
  readonly requestPlane?: NatsRequestPlaneOptions;
  /** How long the first call to etcd may take before the start fails. Default 10 s. */
  readonly discoveryConnectTimeoutMs?: number;
}

/** The stream that keeps workers' KV events with `--durable-kv-events`, for an hour. */
export const KV_EVENTS_STREAM = { stream: "ARMATURE_KV_EVENTS", subjects: ["armature.kv_events.*"], maxAgeMs: 3_600_000 };

/**
 * The same planes over NATS and etcd, for components in separate processes and hosts. Throws
 * `CONFIG_INVALID` naming the flag to fix when a server is unreachable, refuses the credentials or
 * fails the TLS handshake; no error or log line carries a password or token.
 */
export async function connectDistributedRuntime(options: DistributedRuntimeOptions): Promise<Runtime> {
  const bus = compileBusConnection(options.bus, options.busSecurity);
  const discoveryConnection = compileDiscoveryConnection(options.discovery, options.discoverySecurity);
  const onError = options.onError ?? (() => {});
  const invalidMessages = new InvalidMessages(options.onInvalidMessage);
  const nc = await connectBus(bus);
  const etcd = new Etcd3(discoveryConnection.options);
  const discovery = new EtcdDiscovery(etcd, { onError: (e) => onError(e, "discovery"), invalidMessages });
  try {
    await withTimeout(discovery.list(), options.discoveryConnectTimeoutMs ?? 10_000);
  } catch (cause) {
    await nc.close();
    etcd.close();
    throw explainDiscoveryFailure(discoveryConnection, cause);
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
  const requests = new NatsRequestPlane(nc, options.requestPlane);
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
    busConnection: nc,
    async close() {
      await requests.close();
      await discovery.close();
      await nc.drain();
      etcd.close();
    },
  };
}

async function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DiscoveryTimeout(timeoutMs)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
