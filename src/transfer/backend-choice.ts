import type { AgentMetadata, BackendName, TransferDescriptor } from "./descriptors.js";

/**
 * The backend that moves bytes between a local and a remote range: plain copies inside one process
 * (memory; file when a file is involved; object when an object is), the remote file opened directly on one host (shm), and
 * the peer's TCP listener otherwise (which reaches any medium, objects included).
 */
export function chooseBackend(
  local: AgentMetadata,
  remote: AgentMetadata,
  remoteInProcess: boolean,
  localDesc: TransferDescriptor,
  remoteDesc: TransferDescriptor,
): BackendName {
  if (remoteInProcess) {
    if (localDesc.medium === "object" || remoteDesc.medium === "object") return "object";
    return localDesc.medium === "memory" && remoteDesc.medium === "memory" ? "memory" : "file";
  }
  if (local.hostId === remote.hostId && remoteDesc.medium === "file" && remoteDesc.path) return "shm";
  return "tcp";
}
