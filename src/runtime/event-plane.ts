import type { Unsubscribe } from "./discovery.js";

/**
 * Publish/subscribe for KV events, load and decisions. Subjects are dot-separated tokens; a
 * subscription may use NATS wildcards: `*` matches one token, `>` the rest.
 * Delivery is at-most-once and in order per publisher.
 */
export interface EventPlane {
  publish(subject: string, payload: unknown): Promise<void>;
  subscribe(subject: string, handler: (payload: unknown, subject: string) => void): Unsubscribe;
  close(): Promise<void>;
}

/** Whether `subject` matches the subscription `pattern` under NATS wildcard rules. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const want = pattern.split(".");
  const have = subject.split(".");
  for (let i = 0; i < want.length; i++) {
    const token = want[i];
    if (token === ">") return have.length > i;
    if (i >= have.length) return false;
    if (token !== "*" && token !== have[i]) return false;
  }
  return want.length === have.length;
}
