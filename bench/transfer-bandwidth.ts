// Transfer engine bandwidth and latency per backend, side by side with the ceilings in one run:
// Buffer.copy (memcpy) and a raw net.Socket loopback stream from another process.
// Usage: node --import tsx bench/transfer-bandwidth.ts [--json]
import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { createInterface } from "node:readline";
import { type AgentMetadata, TransferAgent, type TransferDescriptor } from "../src/transfer/index.js";
import { machine } from "./load/processes.js";

const sizes = [
  { label: "4 KiB", bytes: 4 << 10, reps: 2000 },
  { label: "1 MiB", bytes: 1 << 20, reps: 200 },
  { label: "64 MiB", bytes: 64 << 20, reps: 12 },
];

interface Peer {
  readonly metadata: AgentMetadata;
  readonly memory: TransferDescriptor;
  readonly file: TransferDescriptor;
  readonly rawPort: number;
  stop(): Promise<void>;
}

async function startPeer(): Promise<Peer> {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/load/transfer-peer.ts"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const line = await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next();
  return {
    ...(JSON.parse(String(line.value)) as Omit<Peer, "stop">),
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.stdin.end();
      await exited;
    },
  };
}

/**
 * Median seconds per path, with the paths' runs interleaved (one run of each in turn, `reps`
 * rounds, after warm-up rounds) so that noise on this shared machine hits them alike.
 */
async function measureInterleaved(reps: number, paths: readonly (() => Promise<void> | void)[]): Promise<number[]> {
  for (let i = 0; i < Math.min(5, reps); i++) for (const once of paths) await once();
  const samples = paths.map(() => [] as number[]);
  for (let i = 0; i < reps; i++) {
    for (const [k, once] of paths.entries()) {
      const t0 = performance.now();
      await once();
      samples[k]?.push((performance.now() - t0) / 1000);
    }
  }
  return samples.map((all) => {
    all.sort((a, b) => a - b);
    return all[Math.floor(all.length / 2)] as number;
  });
}

/** Reads `bytes` from the peer's raw TCP server into a preallocated buffer over one persistent socket. */
async function rawReader(port: number) {
  const socket = connect({ host: "127.0.0.1", port, noDelay: true });
  await new Promise((resolve) => socket.once("connect", resolve));
  let target: Buffer = Buffer.alloc(0);
  let filled = 0;
  let done: (() => void) | undefined;
  socket.on("data", (chunk: Buffer) => {
    chunk.copy(target, filled);
    filled += chunk.length;
    if (filled >= target.length) done?.();
  });
  return {
    read(landing: Buffer): Promise<void> {
      target = landing;
      filled = 0;
      const finished = new Promise<void>((resolve) => {
        done = resolve;
      });
      const ask = Buffer.alloc(8);
      ask.writeBigUInt64LE(BigInt(landing.length));
      socket.write(ask);
      return finished;
    },
    close: () => socket.destroy(),
  };
}

const json = process.argv.includes("--json");
const peer = await startPeer();
const local = await TransferAgent.create();
const sameProcess = await TransferAgent.create();
local.addRemote(peer.metadata);
const raw = await rawReader(peer.rawPort);
const source = Buffer.alloc(64 << 20, 3);
const sourceRegion = sameProcess.registerMemory(source);
const sourceFilePath = sameProcess.sharedPath("bench.bin");
await writeFile(sourceFilePath, source);
const sourceFile = await sameProcess.registerFile(sourceFilePath);
const landing = Buffer.alloc(64 << 20);
const landingRegion = local.registerMemory(landing);

const rows: Record<string, unknown>[] = [];
if (!json) {
  console.log(`transfer engine — ${machine()}\n`);
  console.log("| size | path | GB/s (p50) | p50 latency | ratio to its ceiling |");
  console.log("|---|---|---:|---:|---:|");
}
try {
  for (const size of sizes) {
    const dest = [local.describe(landingRegion.id, 0, size.bytes)];
    const paths: [string, () => Promise<void> | void, string | undefined][] = [
      ["Buffer.copy (memcpy ceiling)", () => void source.copy(landing, 0, 0, size.bytes), undefined],
      ["raw net.Socket loopback (TCP ceiling)", () => raw.read(landing.subarray(0, size.bytes)), undefined],
      [
        "memory backend (same process)",
        async () => void (await local.read(dest, [sameProcess.describe(sourceRegion.id, 0, size.bytes)])),
        "Buffer.copy (memcpy ceiling)",
      ],
      [
        "file backend (same process, /dev/shm file)",
        async () => void (await local.read(dest, [sameProcess.describe(sourceFile.id, 0, size.bytes)])),
        "Buffer.copy (memcpy ceiling)",
      ],
      [
        "shm backend (other process)",
        async () => void (await local.read(dest, [{ ...peer.file, length: size.bytes }])),
        "Buffer.copy (memcpy ceiling)",
      ],
      [
        "tcp backend (other process)",
        async () => void (await local.read(dest, [{ ...peer.memory, length: size.bytes }], { backend: "tcp" })),
        "raw net.Socket loopback (TCP ceiling)",
      ],
    ];
    const results = new Map<string, number>();
    const medians = await measureInterleaved(
      size.reps,
      paths.map(([, once]) => once),
    );
    for (const [k, [name, , ceiling]] of paths.entries()) {
      const p50 = medians[k] as number;
      const gbps = size.bytes / p50 / 1e9;
      results.set(name, gbps);
      const ratio = ceiling ? gbps / (results.get(ceiling) as number) : undefined;
      rows.push({ size: size.label, path: name, gb_s: gbps, p50_ms: p50 * 1000, ratio });
      if (!json) {
        const latency = p50 < 1e-3 ? `${(p50 * 1e6).toFixed(0)} µs` : `${(p50 * 1e3).toFixed(2)} ms`;
        console.log(
          `| ${size.label} | ${name} | ${gbps.toFixed(2)} | ${latency} | ${ratio === undefined ? "" : `${(ratio * 100).toFixed(0)}%`} |`,
        );
      }
    }
  }
} finally {
  raw.close();
  await local.close();
  await sameProcess.close();
  await peer.stop();
}
if (json) console.log(JSON.stringify(rows));
