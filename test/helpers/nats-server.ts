import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { createServer } from "node:net";

/** A real nats-server on free loopback ports, stopped by its pid. */
export interface NatsServer {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export const NATS_SERVER_BINARY = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].find((p) => existsSync(p));

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Starts nats-server (Debian's package) and waits until its /healthz answers; `ports` restarts one in place. */
export async function startNatsServer(
  ports?: { port: number; monitor: number },
  host = "127.0.0.1",
  /** A JetStream store directory turns JetStream on (`-js -sd DIR`). */
  jetStreamDir?: string,
): Promise<NatsServer & { ports: { port: number; monitor: number } }> {
  if (!NATS_SERVER_BINARY) throw new Error("nats-server is not installed (apt-get install nats-server; .ci/run does it)");
  const port = ports?.port ?? (await freePort());
  const monitor = ports?.monitor ?? (await freePort());
  const jetStream = jetStreamDir ? ["-js", "-sd", jetStreamDir] : [];
  const child: ChildProcess = spawn(NATS_SERVER_BINARY, ["-a", host, "-p", String(port), "-m", String(monitor), ...jetStream], {
    stdio: "ignore",
  });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await fetch(`http://${host}:${monitor}/healthz`)).ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("nats-server did not become healthy");
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    ports: { port, monitor },
    url: `nats://${host}:${port}`,
    pid: child.pid as number,
    async stop() {
      if (child.exitCode !== null) return;
      process.kill(child.pid as number, "SIGTERM");
      await once(child, "exit");
    },
  };
}
