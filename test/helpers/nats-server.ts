import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ExitedAtOnce, onFreePorts } from "./free-port.js";

/** A real nats-server on free loopback ports, stopped by its pid. */
export interface NatsServer {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export const NATS_SERVER_BINARY = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].find((p) => existsSync(p));

/** Settings that go into a nats-server configuration file. */
export interface NatsServerSettings {
  /** The largest message the server accepts (its `max_payload`; nats-server's default is 1 MiB). */
  readonly maxPayload?: number;
  /** Clients must present these (`authorization { user, password }` or `{ token }`). */
  readonly auth?: { readonly user: string; readonly password: string } | { readonly token: string };
  /** TLS on the client port; `caFile` with `verify` asks clients for a certificate signed by it. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string; readonly caFile?: string; readonly verify?: boolean };
}

/**
 * Starts nats-server (Debian's package) and waits until its /healthz answers; `ports` restarts one in
 * place. Without `ports`, they are chosen free and, should nats-server exit at once (another process
 * took a port between the choice and its bind), chosen again, up to three times; the error says what
 * nats-server printed.
 */
export async function startNatsServer(
  ports?: { port: number; monitor: number },
  host = "127.0.0.1",
  /** A JetStream store directory turns JetStream on (`-js -sd DIR`). */
  jetStreamDir?: string,
  settings: NatsServerSettings = {},
): Promise<NatsServer & { ports: { port: number; monitor: number } }> {
  if (!NATS_SERVER_BINARY) throw new Error("nats-server is not installed (apt-get install nats-server; .ci/run does it)");
  const configDir = Object.keys(settings).length > 0 ? await mkdtemp(join(tmpdir(), "armature-nats-")) : undefined;
  if (configDir) await writeFile(join(configDir, "nats.conf"), natsConfig(settings));
  const removeConfig = (): Promise<void> => (configDir ? rm(configDir, { recursive: true, force: true }) : Promise.resolve());
  const startOn = (on: { port: number; monitor: number }) => startNatsOn(on, host, jetStreamDir, configDir, removeConfig);
  try {
    if (ports) return await startOn(ports);
    return await onFreePorts(2, ([port, monitor]) => startOn({ port: port as number, monitor: monitor as number }));
  } catch (error) {
    await removeConfig();
    throw error;
  }
}

async function startNatsOn(
  ports: { port: number; monitor: number },
  host: string,
  jetStreamDir: string | undefined,
  configDir: string | undefined,
  removeConfig: () => Promise<void>,
): Promise<NatsServer & { ports: { port: number; monitor: number } }> {
  const { port, monitor } = ports;
  const jetStream = jetStreamDir ? ["-js", "-sd", jetStreamDir] : [];
  const config = configDir ? ["-c", join(configDir, "nats.conf")] : [];
  const child: ChildProcess = spawn(
    NATS_SERVER_BINARY as string,
    [...config, "-a", host, "-p", String(port), "-m", String(monitor), ...jetStream],
    // Its log (standard error) is kept, for the error when it exits at once.
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let printed = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    printed = (printed + chunk).slice(-2_000);
  });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await fetch(`http://${host}:${monitor}/healthz`)).ok) break;
    } catch {
      // not up yet
    }
    if (child.exitCode !== null) {
      const last = printed.trim().split("\n").at(-1) ?? "";
      throw new ExitedAtOnce(`nats-server exited (code ${child.exitCode}) before it became healthy: ${last}`);
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error("nats-server did not become healthy in 10 s");
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  // Past start-up its log is drained and dropped, so a long test cannot fill the pipe.
  child.stderr?.removeAllListeners("data");
  child.stderr?.resume();
  child.once("exit", () => void removeConfig());
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
