import { createServer } from "node:net";

/**
 * A loopback port that was free a moment ago (bound to port 0 and released), for a server that
 * takes no port 0. Another process may bind it before the server does: start servers on such ports
 * through `onFreePorts`.
 */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** A server exited before it answered: on ports just chosen free, most likely one was taken meanwhile. */
export class ExitedAtOnce extends Error {}

/**
 * Starts a server on `count` distinct ports chosen free, and chooses again, up to three tries in
 * all, while `start` fails with `ExitedAtOnce` (another process of the suite took a port between
 * the choice and the server's bind). Any other error, or the third, is thrown.
 */
export async function onFreePorts<T>(count: number, start: (ports: number[]) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    while (ports.length < count) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    try {
      return await start(ports);
    } catch (error) {
      if (attempt >= 3 || !(error instanceof ExitedAtOnce)) throw error;
    }
  }
}
