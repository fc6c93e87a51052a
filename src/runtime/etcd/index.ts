export type { EtcdDiscoveryOptions } from "./etcd-discovery.js";
export { EtcdDiscovery } from "./etcd-discovery.js";
