export type { BusSecurityOptions, CompiledBusConnection } from "./nats-connection.js";
export { compileBusConnection, connectBus } from "./nats-connection.js";
export { NatsDurableEventLog } from "./nats-durable-event-log.js";
export { NatsEventPlane } from "./nats-event-plane.js";
export type { NatsRequestPlaneOptions } from "./nats-request-plane.js";
export { NatsRequestPlane } from "./nats-request-plane.js";
