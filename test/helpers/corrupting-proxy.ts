import { connect, createServer, type Server } from "node:net";

/**
 * A TCP proxy that flips one byte of the traffic on its first connection: byte `at` of the
 * direction `direction` (`down`: from the target to the client). Later connections pass untouched.
 */
export async function startCorruptingProxy(
  targetPort: number,
  options: { at: number; direction: "down" | "up" },
): Promise<{ port: number; corrupted: () => number; close(): Promise<void> }> {
  let connections = 0;
  let flips = 0;
  const server: Server = createServer((client) => {
    const first = ++connections === 1;
    const upstream = connect({ host: "127.0.0.1", port: targetPort });
    let seen = 0;
    const maybeFlip = (chunk: Buffer): Buffer => {
      if (first && seen <= options.at && options.at < seen + chunk.length) {
        chunk.writeUInt8((chunk.readUInt8(options.at - seen) ^ 0xff) & 0xff, options.at - seen);
        flips++;
      }
      seen += chunk.length;
      return chunk;
    };
    client.on("data", (chunk: Buffer) => upstream.write(options.direction === "up" ? maybeFlip(chunk) : chunk));
    upstream.on("data", (chunk: Buffer) => client.write(options.direction === "down" ? maybeFlip(chunk) : chunk));
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    corrupted: () => flips,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
      }),
  };
}
