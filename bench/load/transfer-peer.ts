// The far side of the transfer benchmark, in its own process: a transfer agent with a 64 MiB memory
// region and a 64 MiB file region in /dev/shm, and a raw TCP server that streams the asked number of
// bytes in 1 MiB writes (the baseline). Prints one JSON line with what the parent needs; exits when
// stdin closes.
import { writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { TransferAgent } from "../../src/transfer/index.js";

const SIZE = 64 << 20;
const bytes = Buffer.alloc(SIZE, 7);
const agent = await TransferAgent.create();
const memory = agent.registerMemory(bytes);
const path = agent.sharedPath("region.bin");
await writeFile(path, bytes);
const file = await agent.registerFile(path);

const raw = createServer({ noDelay: true }, (socket) => {
  let pending = Buffer.alloc(0);
  socket.on("data", async (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 8) {
      const size = Number(pending.readBigUInt64LE(0));
      pending = pending.subarray(8);
      for (let at = 0; at < size; at += 1 << 20) {
        if (!socket.write(bytes.subarray(at, Math.min(size, at + (1 << 20))))) {
          await new Promise((resolve) => socket.once("drain", resolve));
        }
      }
    }
  });
  socket.on("error", () => socket.destroy());
});
await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
const address = raw.address();
process.stdout.write(
  `${JSON.stringify({
    metadata: agent.metadata,
    memory: agent.describe(memory.id),
    file: agent.describe(file.id),
    rawPort: typeof address === "object" && address ? address.port : 0,
  })}\n`,
);
process.stdin.resume();
process.stdin.on("end", () => {
  raw.close();
  agent.close().then(() => process.exit(0));
});
