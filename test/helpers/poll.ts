/**
 * Reads `read` every 200 ms until `ok` holds of what it gives, and returns that; fails after
 * `limitMs` naming `what` and the last value read.
 */
export async function until<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean, limitMs = 20_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
