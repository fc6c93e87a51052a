export { NatsDurableEventLog } from "./nats-durable-event-log.js";
export { NatsEventPlane } from "./nats-event-plane.js";
export { NatsRequestPlane } from "./nats-request-plane.js";
