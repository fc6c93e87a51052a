import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ExitedAtOnce, onFreePorts } from "./free-port.js";

/** s3rver's fixed credentials. */
export const S3RVER_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

export interface S3rver {
  readonly endpoint: string;
  stop(): Promise<void>;
}

/**
 * Starts s3rver in its own process on a free loopback port, with whole-object writes as S3 has them
 * (see s3rver-process.mjs); `stop` ends it and removes its files. Should it exit at once (another
 * process took the port between the choice and its bind), a port is chosen again, up to three times.
 */
export async function startS3rver(): Promise<S3rver> {
  const directory = await mkdtemp(join(tmpdir(), "armature-s3rver-"));
  try {
    return await onFreePorts(1, ([port]) => startS3rverOn(port as number, directory));
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
}

async function startS3rverOn(port: number, directory: string): Promise<S3rver> {
  const launcher = join(dirname(fileURLToPath(import.meta.url)), "s3rver-process.mjs");
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
      // S3's ListBuckets answer, so a server of another test that took the port is not taken for it.
      const listing = await (await fetch(endpoint)).text();
      if (listing.includes("ListAllMyBucketsResult")) return { endpoint, stop };
      throw new Error(`not s3rver on ${endpoint}`);
    } catch {
      if (child.exitCode !== null)
        throw new ExitedAtOnce(`s3rver exited (code ${child.exitCode}) before it answered on ${endpoint}`);
      if (Date.now() > deadline) {
        await stop();
        throw new Error("s3rver did not answer in 15 s");
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
