// Runs one `armature bench` load (BenchOptions as JSON in argv[2]) in its own process and prints the
// report as JSON, so the load generator never shares a CPU core's event loop with the server it measures.
import { type BenchOptions, runBench } from "../../src/bench/index.js";

const options = JSON.parse(process.argv[2] ?? "{}") as BenchOptions;
const report = await runBench(options);
process.stdout.write(`${JSON.stringify(report)}\n`);
