import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

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

/** Settings that go into a nats-server configuration file. */
export interface NatsServerSettings {
  /** The largest message the server accepts (its `max_payload`; nats-server's default is 1 MiB). */
  readonly maxPayload?: number;
  /** Clients must present these (`authorization { user, password }` or `{ token }`). */
  readonly auth?: { readonly user: string; readonly password: string } | { readonly token: string };
  /** TLS on the client port; `caFile` with `verify` asks clients for a certificate signed by it. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string; readonly caFile?: string; readonly verify?: boolean };
}

/** Starts nats-server (Debian's package) and waits until its /healthz answers; `ports` restarts one in place. */
export async function startNatsServer(
  ports?: { port: number; monitor: number },
  host = "127.0.0.1",
  /** A JetStream store directory turns JetStream on (`-js -sd DIR`). */
  jetStreamDir?: string,
  settings: NatsServerSettings = {},
): Promise<NatsServer & { ports: { port: number; monitor: number } }> {
  if (!NATS_SERVER_BINARY) throw new Error("nats-server is not installed (apt-get install nats-server; .ci/run does it)");
  const port = ports?.port ?? (await freePort());
  const monitor = ports?.monitor ?? (await freePort());
  const jetStream = jetStreamDir ? ["-js", "-sd", jetStreamDir] : [];
  const configDir = Object.keys(settings).length > 0 ? await mkdtemp(join(tmpdir(), "armature-nats-")) : undefined;
  const config: string[] = [];
  if (configDir) {
    await writeFile(join(configDir, "nats.conf"), natsConfig(settings));
    config.push("-c", join(configDir, "nats.conf"));
  }
  const child: ChildProcess = spawn(
    NATS_SERVER_BINARY,
    [...config, "-a", host, "-p", String(port), "-m", String(monitor), ...jetStream],
    { stdio: "ignore" },
  );
  child.once("exit", () => {
    if (configDir) void rm(configDir, { recursive: true, force: true });
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

function natsConfig(settings: NatsServerSettings): string {
  const lines: string[] = [];
  if (settings.maxPayload !== undefined) lines.push(`max_payload: ${settings.maxPayload}`);
  const auth = settings.auth;
  if (auth && "token" in auth) lines.push(`authorization { token: ${JSON.stringify(auth.token)} }`);
  else if (auth) lines.push(`authorization { user: ${JSON.stringify(auth.user)}, password: ${JSON.stringify(auth.password)} }`);
  const tls = settings.tls;
  if (tls) {
    const fields = [`cert_file: ${JSON.stringify(tls.certFile)}`, `key_file: ${JSON.stringify(tls.keyFile)}`];
    if (tls.caFile) fields.push(`ca_file: ${JSON.stringify(tls.caFile)}`);
    if (tls.verify) fields.push("verify: true");
    lines.push(`tls { ${fields.join(", ")} }`);
  }
  return `${lines.join("\n")}\n`;
}
