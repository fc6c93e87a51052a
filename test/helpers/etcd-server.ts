import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, existsSync, openSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { get as httpsGet } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ExitedAtOnce, onFreePorts } from "./free-port.js";

/** A real single-node etcd on free loopback ports with a temporary data folder, stopped by pid. */
export interface EtcdServer {
  readonly endpoint: string;
  readonly pid: number;
  /** Where a restart finds it: same ports, same data. */
  readonly layout: EtcdLayout;
  /** Stops it; `keepData` leaves the data folder for a restart. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

export interface EtcdLayout {
  readonly client: number;
  readonly peer: number;
  readonly dataDir: string;
}

export const ETCD_BINARY = ["/usr/bin/etcd", "/usr/sbin/etcd"].find((p) => existsSync(p));

/** TLS on etcd's client port (`caFile` signed its certificate); `clientCertAuth` asks clients for one signed by it too. */
export interface EtcdTls {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
  readonly clientCertAuth?: boolean;
  /** A client certificate for the helper's own health check when `clientCertAuth` is on. */
  readonly clientCertFile?: string;
  readonly clientKeyFile?: string;
}

/**
 * Starts etcd (Debian's package) and waits until its /health answers. Without a `layout`, the
 * ports are chosen free and, should etcd exit at once (another process took a port between the
 * choice and etcd's bind), chosen again, up to three times; the error says what etcd printed.
 */
export async function startEtcd(layout?: EtcdLayout, host = "127.0.0.1", options: { tls?: EtcdTls } = {}): Promise<EtcdServer> {
  if (!ETCD_BINARY) throw new Error("etcd is not installed (apt-get install etcd-server; .ci/run does it)");
  if (layout) return startEtcdOn(layout, host, options.tls);
  const dataDir = await mkdtemp(join(tmpdir(), "armature-etcd-"));
  try {
    return await onFreePorts(2, async ([client, peer]) => {
      try {
        return await startEtcdOn({ client: client as number, peer: peer as number, dataDir }, host, options.tls);
      } catch (error) {
        await rm(logPathOf(dataDir), { force: true });
        throw error;
      }
    });
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

/** Where etcd's own log goes: beside its data folder (so a restart on the same layout writes it again). */
const logPathOf = (dataDir: string): string => `${dataDir}.log`;

async function startEtcdOn(layout: EtcdLayout, host: string, tls: EtcdTls | undefined): Promise<EtcdServer> {
  const { client, peer, dataDir } = layout;
  const logPath = logPathOf(dataDir);
  const logFd = openSync(logPath, "w");
  const scheme = tls ? "https" : "http";
  const tlsFlags = tls
    ? [
        "--cert-file",
        tls.certFile,
        "--key-file",
        tls.keyFile,
        // etcd 3.4 asks every client for a certificate once it has a trusted CA: only then.
        ...(tls.clientCertAuth ? ["--trusted-ca-file", tls.caFile, "--client-cert-auth"] : []),
      ]
    : [];
  const child: ChildProcess = spawn(
    ETCD_BINARY as string,
    [
      "--name",
      "armature-test",
      "--data-dir",
      dataDir,
      "--listen-client-urls",
      `${scheme}://${host}:${client}`,
      "--advertise-client-urls",
      `${scheme}://${host}:${client}`,
      "--listen-peer-urls",
      `http://127.0.0.1:${peer}`,
      "--initial-advertise-peer-urls",
      `http://127.0.0.1:${peer}`,
      "--initial-cluster",
      `armature-test=http://127.0.0.1:${peer}`,
      ...tlsFlags,
    ],
    // Its log (standard error) goes to a file beside the data, for the error when it exits at once.
    { stdio: ["ignore", "ignore", logFd] },
  );
  closeSync(logFd);
  const deadline = Date.now() + 20_000;
  const healthy = tls
    ? () => httpsHealthy(`https://${host}:${client}/health`, tls)
    : async () => (await fetch(`http://${host}:${client}/health`)).ok;
  for (;;) {
    try {
      if (await healthy()) break;
    } catch {
      // not up yet
    }
    if (child.exitCode !== null) {
      const printed = (await readFile(logPath, "utf8").catch(() => "")).trim().split("\n").at(-1) ?? "";
      throw new ExitedAtOnce(`etcd exited (code ${child.exitCode}) before it became healthy: ${printed}`);
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error("etcd did not become healthy in 20 s");
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    endpoint: `${host}:${client}`,
    pid: child.pid as number,
    layout: { client, peer, dataDir },
    async stop(options = {}) {
      if (child.exitCode === null) {
        process.kill(child.pid as number, "SIGTERM");
        await once(child, "exit");
      }
      if (!options.keepData) await Promise.all([rm(dataDir, { recursive: true, force: true }), rm(logPath, { force: true })]);
    },
  };
}

async function httpsHealthy(url: string, tls: EtcdTls): Promise<boolean> {
  const ca = await readFile(tls.caFile);
  const cert = tls.clientCertFile ? await readFile(tls.clientCertFile) : undefined;
  const key = tls.clientKeyFile ? await readFile(tls.clientKeyFile) : undefined;
  return new Promise((resolve, reject) => {
    const request = httpsGet(url, { ca, cert, key }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on("error", reject);
  });
}
