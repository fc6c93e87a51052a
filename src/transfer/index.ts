export { StreamingChecksum } from "./checksum.js";
export { type CostModel, defaultCostModels, fitCostModel, transferMs } from "./cost-model.js";
export type { AgentMetadata, BackendName, Medium, TransferDescriptor, TransferOp, TransferResult } from "./descriptors.js";
export { backendNames } from "./descriptors.js";
export { DirectoryObjectStore } from "./directory-object-store.js";
export { localHostId } from "./host-id.js";
export { NatsObjectStore, type NatsObjectStoreOptions } from "./nats-object-store.js";
export { MemoryObjectStore, type ObjectEntry, type ObjectStore } from "./object-store.js";
export {
  type ObjectStoreLocation,
  type OpenObjectStoreOptions,
  openObjectStore,
  parseObjectStoreUrl,
} from "./object-store-url.js";
export type { Region } from "./regions.js";
export { S3ObjectStore, type S3ObjectStoreOptions } from "./s3-object-store.js";
export { isProcessAlive } from "./shared-dir.js";
export {
  checkTransferSecret,
  TransferAgent,
  type TransferAgentOptions,
  type TransferOptions,
  type TransferRefusal,
} from "./transfer-agent.js";
