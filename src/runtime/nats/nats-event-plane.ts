import type { NatsConnection } from "@nats-io/transport-node";
import type { Unsubscribe } from "../discovery.js";
import type { EventPlane } from "../event-plane.js";
import { decodeMessage, encodeMessage } from "../wire-codec.js";

/** Event plane on NATS core subjects: at-most-once, in order per publisher. */
export class NatsEventPlane implements EventPlane {
  readonly #nc: NatsConnection;
  readonly #onHandlerError: (error: unknown, subject: string) => void;

  constructor(nc: NatsConnection, options: { onHandlerError?: (error: unknown, subject: string) => void } = {}) {
    this.#nc = nc;
    this.#onHandlerError = options.onHandlerError ?? (() => {});
  }

  async publish(subject: string, payload: unknown): Promise<void> {
    this.#nc.publish(subject, encodeMessage(payload));
  }

  subscribe(subject: string, handler: (payload: unknown, subject: string) => void): Unsubscribe {
    const sub = this.#nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error) return this.#onHandlerError(error, subject);
        try {
          handler(decodeMessage(msg.data), msg.subject);
        } catch (handlerError) {
          this.#onHandlerError(handlerError, msg.subject);
        }
      },
    });
    return () => sub.unsubscribe();
  }

  /** Waits until everything published so far has reached the server. */
  async flush(): Promise<void> {
    await this.#nc.flush();
  }

  async close(): Promise<void> {}
}
