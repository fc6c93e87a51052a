import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * A Linux network namespace joined to this one by a veth pair: a second "host" on this machine,
 * reached at `nsAddress` from here, reaching us at `hostAddress`. Made and removed by the test.
 */
export interface TestHost {
  readonly name: string;
  readonly hostAddress: string;
  readonly nsAddress: string;
  /** argv prefix that runs a command inside the namespace. */
  readonly exec: readonly string[];
  remove(): Promise<void>;
}

/** Creates the namespace, or returns the reason it cannot be made here. */
export async function createTestHost(): Promise<TestHost | { readonly unavailable: string }> {
  const id = process.pid % 10_000;
  const name = `armature-${id}`;
  const outside = `arm${id}h`;
  const inside = `arm${id}n`;
  const subnet = 100 + (id % 100);
  const hostAddress = `10.251.${subnet}.1`;
  const nsAddress = `10.251.${subnet}.2`;
  const steps: string[][] = [
    ["netns", "add", name],
    ["link", "add", outside, "type", "veth", "peer", "name", inside],
    ["link", "set", inside, "netns", name],
    ["addr", "add", `${hostAddress}/30`, "dev", outside],
    ["link", "set", outside, "up"],
    ["-n", name, "addr", "add", `${nsAddress}/30`, "dev", inside],
    ["-n", name, "link", "set", inside, "up"],
    ["-n", name, "link", "set", "lo", "up"],
  ];
  const remove = async (): Promise<void> => {
    await run("ip", ["link", "del", outside]).catch(() => {});
    await run("ip", ["netns", "del", name]).catch(() => {});
  };
  try {
    for (const step of steps) await run("ip", step);
  } catch (error) {
    await remove();
    return { unavailable: `network namespaces cannot be made here (${(error as Error).message.split("\n")[0]})` };
  }
  return { name, hostAddress, nsAddress, exec: ["ip", "netns", "exec", name], remove };
}
