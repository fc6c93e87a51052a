// A transfer agent in its own process: registers a memory region and a shared file with the
// bytes 0..255 repeated, prints its metadata and descriptors as one JSON line, and reports each
// notification it receives on stdout until stdin closes.
import { writeFile } from "node:fs/promises";
import { TransferAgent } from "../../src/transfer/index.js";

const size = Number(process.argv[2] ?? 1 << 20);
const bytes = Buffer.alloc(size);
for (let i = 0; i < size; i++) bytes[i] = i & 0xff;
const agent = await TransferAgent.create();
const memory = agent.registerMemory(bytes);
const path = agent.sharedPath("state.bin");
await writeFile(path, bytes);
const file = await agent.registerFile(path);
agent.onNotification((from, message) => process.stdout.write(`${JSON.stringify({ notification: message, from })}\n`));
process.stdout.write(
  `${JSON.stringify({ metadata: agent.metadata, memory: agent.describe(memory.id), file: agent.describe(file.id) })}\n`,
);
process.stdin.resume();
process.stdin.on("end", () => {
  agent.close().then(() => process.exit(0));
});
