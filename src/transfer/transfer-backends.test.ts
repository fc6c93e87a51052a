import { transferContract } from "./contracts/transfer-contract.js";
import { TransferAgent } from "./transfer-agent.js";

async function pair(remoteMedium: "memory" | "file", placement: "in-process" | "same-host" | "other-host") {
  const local = await TransferAgent.create();
  const remote = await TransferAgent.create();
  // Peers added from metadata are reached as remote processes would be.
  if (placement === "same-host") local.addRemote(remote.metadata, { forceRemote: true });
  if (placement === "other-host") local.addRemote({ ...remote.metadata, hostId: "another-host" }, { forceRemote: true });
  return {
    local,
    remote,
    remoteMedium,
    async close() {
      await local.close();
      await remote.close();
    },
  };
}

transferContract("memory", () => pair("memory", "in-process"));
transferContract("file", () => pair("file", "in-process"));
transferContract("shm", () => pair("file", "same-host"));
transferContract("tcp", () => pair("memory", "other-host"));
