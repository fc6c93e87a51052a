// Runs one load spec (JSON in argv[2]) in its own process and prints the result as JSON, so the
// load generator never shares a CPU core's event loop with the server it measures.
import { type LoadSpec, runLoad } from "./http-load.js";

const spec = JSON.parse(process.argv[2] ?? "{}") as LoadSpec;
const result = await runLoad(spec);
process.stdout.write(`${JSON.stringify(result)}\n`);
