import { after, before } from "node:test";
import { Etcd3 } from "etcd3";
import { discoveryContract } from "../../src/runtime/contracts/discovery-contract.js";
import { EtcdDiscovery } from "../../src/runtime/etcd/index.js";
import { type EtcdServer, startEtcd } from "../helpers/etcd-server.js";

// The discovery contract suite against a real etcd (leases expire in real time here).
let server: EtcdServer;
let fixtureSeq = 0;

before(async () => {
  server = await startEtcd();
});
after(async () => {
  await server.stop();
});

discoveryContract("etcd discovery", async () => {
  const etcd = new Etcd3({ hosts: server.endpoint });
  // Each fixture under its own prefix, so tests do not see each other's instances.
  const discovery = new EtcdDiscovery(etcd, { prefix: `/armature-test/${++fixtureSeq}/instances/` });
  return {
    discovery,
    passTime: (ms) => new Promise((r) => setTimeout(r, ms)),
    close: async () => {
      await discovery.close();
      etcd.close();
    },
  };
});
