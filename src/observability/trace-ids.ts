import { randomFillSync } from "node:crypto";

// The ids and timestamps spans carry, made cheaply: they are drawn for every request.

/** Epoch milliseconds with sub-millisecond precision (spans are timed in ns by OTLP). */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Random bytes drawn a pool at a time: one `randomBytes` call per id costs microseconds, per request. */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomHex(bytes: number): string {
  if (poolOffset + bytes > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString("hex", poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return hex;
}

/** 32 random lowercase hex digits, never all zeros (W3C trace-id). */
export function randomTraceId(): string {
  for (;;) {
    const id = randomHex(16);
    if (id !== "00000000000000000000000000000000") return id;
  }
}

/** 16 random lowercase hex digits, never all zeros (W3C parent-id). */
export function randomSpanId(): string {
  for (;;) {
    const id = randomHex(8);
    if (id !== "0000000000000000") return id;
  }
}
