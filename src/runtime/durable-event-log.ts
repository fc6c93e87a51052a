/** An event the log kept, as it was published. */
export interface LoggedEvent {
  readonly subject: string;
  readonly payload: unknown;
}

/**
 * Keeps what is published on some event-plane subjects, so a component that starts late can read
 * everything published before it subscribed (NATS JetStream in the distributed runtime).
 */
export interface DurableEventLog {
  /** Every kept event, oldest first, up to the newest one at the time of the call. */
  replay(): AsyncIterable<LoggedEvent>;
}
