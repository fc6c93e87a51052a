// Runs one `armature bench` load (BenchOptions as JSON in argv[2]) in its own process and prints the
// report as JSON, with the CPU this process used (a share of one core over the run), so the load
// generator never shares a CPU core's event loop with the server it measures and its cost shows.
import { type BenchOptions, runBench } from "../../src/bench/index.js";

const options = JSON.parse(process.argv[2] ?? "{}") as BenchOptions;
const before = process.cpuUsage();
const report = await runBench(options);
const used = process.cpuUsage(before);
process.stdout.write(`${JSON.stringify({ ...report, generator_cpu: (used.user + used.system) / 1e6 / report.seconds })}\n`);
