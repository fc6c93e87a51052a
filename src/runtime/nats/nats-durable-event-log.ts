import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { type NatsConnection, nanos } from "@nats-io/transport-node";
import { ArmatureError } from "../../protocol/index.js";
import type { DurableEventLog, LoggedEvent } from "../durable-event-log.js";
import { decodeMessage } from "../wire-codec.js";

export interface NatsDurableEventLogOptions {
  /** JetStream stream name. */
  readonly stream: string;
  /** Subjects the stream captures (core publishes on them are stored too). */
  readonly subjects: readonly string[];
  /** How long events are kept. */
  readonly maxAgeMs: number;
}

/**
 * A JetStream stream over event-plane subjects. Publishers need not change: the server stores
 * every core publish on the stream's subjects. Needs nats-server started with JetStream (`-js`).
 */
export class NatsDurableEventLog implements DurableEventLog {
  readonly #nc: NatsConnection;
  readonly #o: NatsDurableEventLogOptions;

  private constructor(nc: NatsConnection, options: NatsDurableEventLogOptions) {
    this.#nc = nc;
    this.#o = options;
  }

  /** Creates the stream when it does not exist yet. */
  static async open(nc: NatsConnection, options: NatsDurableEventLogOptions): Promise<NatsDurableEventLog> {
    let jsm: Awaited<ReturnType<typeof jetstreamManager>>;
    try {
      jsm = await jetstreamManager(nc);
    } catch (cause) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        "--durable-kv-events needs JetStream: start nats-server with -js (and a store directory, -sd DIR)",
        { cause },
      );
    }
    try {
      await jsm.streams.info(options.stream);
    } catch {
      await jsm.streams.add({
        name: options.stream,
        subjects: [...options.subjects],
        max_age: nanos(options.maxAgeMs),
        storage: StorageType.File,
      });
    }
    return new NatsDurableEventLog(nc, options);
  }

  async *replay(): AsyncGenerator<LoggedEvent> {
    const jsm = await jetstreamManager(this.#nc);
    const info = await jsm.streams.info(this.#o.stream);
    if (info.state.messages === 0) return;
    const last = info.state.last_seq;
    // An ordered consumer: ephemeral, in order, from the first kept message.
    const consumer = await jetstream(this.#nc).consumers.get(this.#o.stream);
    const messages = await consumer.consume();
    try {
      for await (const message of messages) {
        yield { subject: message.subject, payload: decodeMessage(message.data) };
        if (message.seq >= last || message.info.pending === 0) break;
      }
    } finally {
      await messages.close();
    }
  }
}
