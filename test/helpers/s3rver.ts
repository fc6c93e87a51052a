import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./nats-server.js";

/** s3rver's fixed credentials. */
export const S3RVER_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

export interface S3rver {
  readonly endpoint: string;
  stop(): Promise<void>;
}

/**
 * Starts s3rver in its own process on a free loopback port, with whole-object writes as S3 has them
 * (see s3rver-process.mjs); `stop` ends it and removes its files.
 */
export async function startS3rver(): Promise<S3rver> {
  const launcher = join(dirname(fileURLToPath(import.meta.url)), "s3rver-process.mjs");
  const directory = await mkdtemp(join(tmpdir(), "armature-s3rver-"));
  const port = await freePort();
  // s3rver's ListObjectsV2 continuation tokens use DES, which OpenSSL 3 keeps in its legacy provider.
  const child: ChildProcess = spawn(
    process.execPath,
    ["--openssl-legacy-provider", launcher, directory, "127.0.0.1", String(port)],
    { stdio: "ignore" },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
    await rm(directory, { recursive: true, force: true });
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await fetch(endpoint);
      return { endpoint, stop };
    } catch {
      if (Date.now() > deadline || child.exitCode !== null) {
        await stop();
        throw new Error("s3rver did not start");
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
