import { createServer } from "node:net";

/**
 * A loopback port that was free a moment ago (bound to port 0 and released), for a server that
 * takes no port 0. Another process may bind it before the server does: the helpers that start
 * servers on it choose again when the server exits at once.
 */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
