import { rm, writeFile } from "node:fs/promises";
import { TcpConnection } from "./backends/tcp-connection.js";
import { type CostModel, fitCostModel } from "./cost-model.js";
import type { BackendName } from "./descriptors.js";
import { copyRange, fileAccess, memoryAccess, type RegionTable } from "./regions.js";

const SMALL = 4 << 10;
const LARGE = 4 << 20;
const REPS = 5;

async function median(reps: number, once: () => Promise<void>): Promise<number> {
  await once();
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await once();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

async function fit(run: (bytes: number) => Promise<void>): Promise<CostModel> {
  const small = await median(REPS, () => run(SMALL));
  const large = await median(REPS, () => run(LARGE));
  return fitCostModel({ bytes: SMALL, ms: small }, { bytes: LARGE, ms: large });
}

/**
 * Measures `α` and bandwidth of each backend on this host with 4 KiB and 4 MiB transfers (a copy in
 * memory, a tmpfs file read for file and shm, a read from the agent's own listener for TCP).
 * Takes a few tens of milliseconds.
 */
export async function calibrateBackends(
  regions: RegionTable,
  sharedPath: (name: string) => string,
  listener: { host: string; port: number },
  secret?: string,
): Promise<Record<BackendName, CostModel>> {
  const source = Buffer.alloc(LARGE, 1);
  const landing = Buffer.alloc(LARGE);
  const memory = await fit(async (bytes) => copyRange(memoryAccess(source), 0, memoryAccess(landing), 0, bytes));
  const path = sharedPath(".calibration.bin");
  await writeFile(path, source);
  const file = await fit(async (bytes) => copyRange(fileAccess(path), 0, memoryAccess(landing), 0, bytes));
  const region = regions.registerMemory(source, ".calibration");
  const connection = new TcpConnection(listener.host, listener.port, secret);
  try {
    const tcp = await fit((bytes) => connection.read(region.id, 0, landing.subarray(0, bytes)));
    // Objects are measured as files: the directory store is files, and the memory store is faster.
    return { memory, file, object: file, shm: file, tcp };
  } finally {
    connection.close();
    regions.deregister(region.id);
    await rm(path, { force: true });
  }
}
