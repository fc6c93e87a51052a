export { StreamingChecksum } from "./checksum.js";
export { type CostModel, defaultCostModels, fitCostModel, transferMs } from "./cost-model.js";
export type { AgentMetadata, BackendName, Medium, TransferDescriptor, TransferOp, TransferResult } from "./descriptors.js";
export { backendNames } from "./descriptors.js";
export { localHostId } from "./host-id.js";
export { DirectoryObjectStore, MemoryObjectStore, type ObjectStore } from "./object-store.js";
export type { Region } from "./regions.js";
export {
  checkTransferSecret,
  TransferAgent,
  type TransferAgentOptions,
  type TransferOptions,
  type TransferRefusal,
} from "./transfer-agent.js";
