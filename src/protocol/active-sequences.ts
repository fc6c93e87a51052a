/** A change to one request's booking, shared between router replicas. */
export interface ActiveSequenceEvent {
  readonly type: "active-sequence";
  readonly routerId: string;
  readonly requestId: string;
  readonly workerId: string;
  readonly action: "add" | "prefill-done" | "free";
  readonly prefillTokens: number;
  readonly decodeBlocks: number;
}
