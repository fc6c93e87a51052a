export type { CompiledDiscoveryConnection, DiscoverySecurityOptions } from "./etcd-connection.js";
export { compileDiscoveryConnection } from "./etcd-connection.js";
export type { EtcdDiscoveryOptions } from "./etcd-discovery.js";
export { EtcdDiscovery } from "./etcd-discovery.js";
