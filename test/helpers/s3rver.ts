import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { freePort } from "./nats-server.js";

/** s3rver's fixed credentials. */
export const S3RVER_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

export interface S3rver {
  readonly endpoint: string;
  stop(): Promise<void>;
}

/** Starts s3rver in its own process on a free loopback port; `stop` ends it and removes its files. */
export async function startS3rver(): Promise<S3rver> {
  const bin = join(dirname(createRequire(import.meta.url).resolve("s3rver/package.json")), "bin", "s3rver.js");
  const directory = await mkdtemp(join(tmpdir(), "armature-s3rver-"));
  const port = await freePort();
  // s3rver's ListObjectsV2 continuation tokens use DES, which OpenSSL 3 keeps in its legacy provider.
  const child: ChildProcess = spawn(
    process.execPath,
    ["--openssl-legacy-provider", bin, "-d", directory, "-a", "127.0.0.1", "-p", String(port), "--silent"],
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
