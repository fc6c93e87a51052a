import { ArmatureError, type Schema } from "../protocol/index.js";

/** Told of each message dropped as malformed: what kind it was meant to be, where it came from, why. */
export type InvalidMessageListener = (kind: string, subject: string, error: unknown) => void;

/**
 * The one gate for messages that cross a plane: each is checked against its schema before use; a
 * malformed one is counted by kind, reported to the listener (the CLI logs it) and dropped, never
 * thrown into the code that would have used it.
 *
 * A gate built `inProcess` belongs to planes whose messages never leave the process (`armature
 * serve`, a replay): what arrives is an object another part of the same program built, so `accept`
 * and `check` hand it on unchecked. Bytes that do cross a boundary (NATS, etcd, a TCP frame) are
 * decoded by the distributed runtime's planes, whose gate checks every message (decision 0014).
 */
export class InvalidMessages {
  readonly #counts = new Map<string, number>();
  readonly #listener: InvalidMessageListener | undefined;
  readonly #inProcess: boolean;

  constructor(listener?: InvalidMessageListener, options: { readonly inProcess?: boolean } = {}) {
    this.#listener = listener;
    this.#inProcess = options.inProcess === true;
  }

  /** Malformed messages dropped since start, by kind (`kv-event-batch`, `worker-load`, …). */
  get counts(): ReadonlyMap<string, number> {
    return this.#counts;
  }

  /** `payload` as a `T`, or undefined when it is malformed (then counted and reported). */
  accept<T>(kind: string, schema: Schema<T>, payload: unknown, subject = kind): T | undefined {
    if (this.#inProcess) return payload as T;
    try {
      return schema.parse(payload);
    } catch (error) {
      this.record(kind, subject, error);
      return undefined;
    }
  }

  /**
   * `payload` as a `T`; a malformed one is counted, reported and refused with `REQUEST_INVALID`
   * naming the field at fault (for request-plane handlers, whose caller hears the error).
   */
  check<T>(kind: string, schema: Schema<T>, payload: unknown, subject = kind): T {
    if (this.#inProcess) return payload as T;
    try {
      return schema.parse(payload);
    } catch (error) {
      this.record(kind, subject, error);
      throw new ArmatureError("REQUEST_INVALID", `malformed ${kind}: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Counts and reports a message dropped for a reason found outside its schema (bad bytes, say). */
  record(kind: string, subject: string, error: unknown): void {
    this.#counts.set(kind, (this.#counts.get(kind) ?? 0) + 1);
    try {
      this.#listener?.(kind, subject, error);
    } catch {
      // A failing listener must not turn a dropped message into a crash.
    }
  }
}
