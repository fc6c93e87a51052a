import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { networkInterfaces, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ArmatureError, isArmatureError } from "../protocol/index.js";
import { chooseBackend } from "./backend-choice.js";
import { TcpConnection } from "./backends/tcp-connection.js";
import { isLoopback, MIN_SECRET_LENGTH, SECRET_HINT } from "./backends/tcp-handshake.js";
import { type RefusalReason, TcpTransferServer } from "./backends/tcp-server.js";
import { calibrateBackends } from "./calibration.js";
import { type CostModel, defaultCostModels, transferMs } from "./cost-model.js";
import {
  type AgentMetadata,
  type BackendName,
  backendNames,
  type TransferDescriptor,
  type TransferOp,
  type TransferResult,
} from "./descriptors.js";
import { localHostId } from "./host-id.js";
import type { ObjectStore } from "./object-store.js";
import { checkRange, copyRange, fileAccess, type RangeAccess, type Region, RegionTable, regionAccess } from "./regions.js";
import {
  confinedSharedFile,
  createSharedDir,
  freeBytes,
  isPlainFileName,
  sharedFolderName,
  sweepDeadSharedDirs,
} from "./shared-dir.js";

export interface TransferAgentOptions {
  /** Unique name; default a random one. */
  readonly name?: string;
  /**
   * Address the TCP listener binds (default 127.0.0.1, port 0 = any free one). An address beyond
   * loopback needs `secret`: `create` refuses to start without one.
   */
  readonly host?: string;
  readonly port?: number;
  /** Address peers dial, when it differs from the bound one (0.0.0.0 binds). */
  readonly advertiseHost?: string;
  /** Default: this machine's hostname and boot id. Agents with equal ids use shared memory. */
  readonly hostId?: string;
  /** Folder for shared regions; default /dev/shm/armature-NAME (the temp folder where /dev/shm is missing). */
  readonly sharedDir?: string;
  /** Retries of a transfer whose checksum did not match. Default 2. */
  readonly retries?: number;
  readonly costModels?: Partial<Record<BackendName, CostModel>>;
  /** Told about every finished transfer (metrics). */
  readonly onTransfer?: (result: TransferResult, op: TransferOp) => void;
  /**
   * The deployment's shared secret (`--transfer-secret`, at least 32 characters). With it, every TCP
   * connection opens with a challenge-response handshake (HMAC-SHA256; the secret never crosses the
   * wire) and peers that fail it are closed; without it, the listener serves whoever connects, which
   * is allowed on loopback only.
   */
  readonly secret?: string | undefined;
  /** Told about every connection the listener closed: a malformed frame, or a failed handshake (logs). */
  readonly onRefused?: (refusal: TransferRefusal) => void;
}

/** A connection the listener closed because of what its peer sent. */
export interface TransferRefusal {
  readonly reason: RefusalReason;
  readonly detail: string;
  /** The peer's address and port. */
  readonly peer: string;
}

export interface TransferOptions {
  readonly signal?: AbortSignal | undefined;
  /** Sent to the remote agent once the bytes have moved (NIXL's notification). */
  readonly notification?: string | undefined;
  /** Forces a backend (tests and benchmarks); default: chosen from where both sides are. */
  readonly backend?: BackendName | undefined;
}

/** Agents of this process, reachable by plain copies. */
const inProcess = new Map<string, TransferAgent>();

/**
 * armature's NIXL: registers memory regions and files, describes them with descriptors peers can
 * use, and moves bytes between descriptor lists with one call, whichever backend carries them.
 */
export class TransferAgent {
  readonly name: string;
  readonly sharedDir: string;
  readonly regions: RegionTable;
  readonly #server: TcpTransferServer;
  #metadata: AgentMetadata;
  readonly #options: TransferAgentOptions;
  readonly #peers = new Map<string, AgentMetadata>();
  /** Peers to reach as remote even though they live in this process (tests, benchmarks). */
  readonly #forced = new Set<string>();
  readonly #connections = new Map<string, TcpConnection>();
  readonly #listeners = new Set<(from: string, message: string) => void>();
  readonly #costs: Record<BackendName, CostModel>;
  readonly #refused: Record<RefusalReason, number>;
  #closed = false;

  private constructor(
    options: TransferAgentOptions,
    name: string,
    sharedDir: string,
    regions: RegionTable,
    server: TcpTransferServer,
    refused: Record<RefusalReason, number>,
  ) {
    this.#options = options;
    this.#refused = refused;
    this.regions = regions;
    this.name = name;
    this.sharedDir = sharedDir;
    this.#server = server;
    this.#costs = { ...defaultCostModels, ...options.costModels };
    const host = options.advertiseHost ?? advertisedAddress(options.host ?? "127.0.0.1");
    this.#metadata = {
      name,
      hostId: options.hostId ?? localHostId(),
      address: { host, port: server.port },
      costModels: { ...this.#costs },
    };
  }

  static async create(options: TransferAgentOptions = {}): Promise<TransferAgent> {
    const name = options.name ?? `agent-${randomUUID().slice(0, 8)}`;
    if (inProcess.has(name)) throw new ArmatureError("REQUEST_INVALID", `a transfer agent named ${name} already exists`);
    checkTransferSecret(options.host ?? "127.0.0.1", options.secret);
    const parent = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
    // The pid keeps agents of one name in two processes on a host (two deployments that both name a
    // worker p1) out of each other's folder: each sweeps and removes only its own.
    const sharedDir = options.sharedDir ?? join(parent, sharedFolderName(name, process.pid));
    if (!options.sharedDir) sweepDeadSharedDirs(parent);
    await createSharedDir(sharedDir);
    const regions = new RegionTable();
    let agent: TransferAgent | undefined;
    const refused: Record<RefusalReason, number> = { malformed: 0, unauthenticated: 0 };
    const server = await TcpTransferServer.listen(options.host ?? "127.0.0.1", options.port ?? 0, {
      regions,
      secret: options.secret,
      onNotify: (from, message) => {
        if (agent) agent.#deliver(from, message);
      },
      onRefused: (reason, detail, peer) => {
        refused[reason]++;
        options.onRefused?.({ reason, detail, peer });
      },
    });
    agent = new TransferAgent(options, name, sharedDir, regions, server, refused);
    inProcess.set(name, agent);
    return agent;
  }

  /** Connections the listener closed so far, by reason. */
  get refusedConnections(): Readonly<Record<RefusalReason, number>> {
    return { ...this.#refused };
  }

  /** What peers need to reach this agent, with its current cost models (published through discovery). */
  get metadata(): AgentMetadata {
    return this.#metadata;
  }

  registerMemory(buffer: Buffer, id?: string): Region {
    return this.regions.registerMemory(buffer, id);
  }

  registerFile(path: string, options?: { id?: string; length?: number }): Promise<Region> {
    return this.regions.registerFile(path, options);
  }

  /** Registers an object (a key in an object store) as a region. */
  registerObject(store: ObjectStore, key: string, options?: { id?: string; length?: number }): Promise<Region> {
    return this.regions.registerObject(store, key, options);
  }

  deregister(id: string): boolean {
    return this.regions.deregister(id);
  }

  /**
   * A path in this agent's shared folder, for files peers on this host may open directly. Throws
   * `REQUEST_INVALID` for a name with a folder part or `..` (names may carry ids from peers).
   */
  sharedPath(fileName: string): string {
    if (!isPlainFileName(fileName)) {
      throw new ArmatureError("REQUEST_INVALID", `${JSON.stringify(fileName)} is not a plain file name`);
    }
    return join(this.sharedDir, fileName);
  }

  /** Bytes still free on the file system of the shared folder (/dev/shm is 64 MiB in Docker by default). */
  sharedFreeBytes(): Promise<number> {
    return freeBytes(this.sharedDir);
  }

  /** A descriptor of `[offset, offset + length)` of a registered region, for peers. */
  describe(regionId: string, offset = 0, length?: number): TransferDescriptor {
    const whole = this.regions.get(regionId);
    const size = length ?? whole.length - offset;
    const region = this.regions.get(regionId, offset, size);
    return {
      agent: this.name,
      region: region.id,
      offset,
      length: size,
      medium: region.medium,
      ...(region.medium === "file" ? { path: region.path } : {}),
    };
  }

  /**
   * Makes a peer reachable (its metadata came through discovery). `forceRemote` reaches a peer of
   * this process as if it were in another one (over shm or TCP), for tests and benchmarks.
   */
  addRemote(metadata: AgentMetadata, options: { forceRemote?: boolean } = {}): void {
    if (metadata.name === this.name) return;
    this.#peers.set(metadata.name, metadata);
    if (options.forceRemote) this.#forced.add(metadata.name);
  }

  removeRemote(name: string): void {
    this.#peers.delete(name);
    this.#forced.delete(name);
    const key = this.#connectionKey(name);
    if (key) this.#connections.get(key)?.close();
  }

  /** Copies each remote range into the local range at the same position of the lists. */
  read(local: readonly TransferDescriptor[], remote: readonly TransferDescriptor[], options: TransferOptions = {}) {
    return this.#transfer("read", local, remote, options);
  }

  /** Copies each local range into the remote range at the same position of the lists. */
  write(local: readonly TransferDescriptor[], remote: readonly TransferDescriptor[], options: TransferOptions = {}) {
    return this.#transfer("write", local, remote, options);
  }

  /** Sends a notification on its own. */
  async notify(agentName: string, message: string, signal?: AbortSignal): Promise<void> {
    const local = inProcess.get(agentName);
    if (local && !this.#forcedRemote(agentName)) {
      queueMicrotask(() => local.#deliver(this.name, message));
      return;
    }
    await this.#connection(agentName).notify(this.name, message, signal);
  }

  /** Calls `listener` with each notification peers send. Returns a function that stops it. */
  onNotification(listener: (from: string, message: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The backend and modelled milliseconds to move `bytes` of files from `agentName`. */
  estimate(agentName: string, bytes: number, medium: "memory" | "file" = "file"): { backend: BackendName; ms: number } {
    const peer = this.#peer(agentName);
    const desc = { agent: agentName, region: "", offset: 0, length: bytes, medium, path: "estimate" } as const;
    const backend = chooseBackend(this.#metadata, peer, this.#inProcess(agentName), desc, desc);
    return { backend, ms: transferMs(this.#costs[backend], bytes) };
  }

  /** Replaces the default cost models with ones measured on this host now (tens of milliseconds). */
  async calibrate(): Promise<Readonly<Record<BackendName, CostModel>>> {
    const measured = await calibrateBackends(
      this.regions,
      (name) => this.sharedPath(name),
      { host: dialable(this.#options.host ?? "127.0.0.1"), port: this.#server.port },
      this.#options.secret,
    );
    for (const backend of backendNames) {
      if (!this.#options.costModels?.[backend]) this.#costs[backend] = measured[backend];
    }
    this.#metadata = { ...this.#metadata, costModels: { ...this.#costs } };
    return { ...this.#costs };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    inProcess.delete(this.name);
    for (const connection of this.#connections.values()) connection.close();
    await this.#server.close();
    await rm(this.sharedDir, { recursive: true, force: true });
  }

  async #transfer(
    op: TransferOp,
    local: readonly TransferDescriptor[],
    remote: readonly TransferDescriptor[],
    options: TransferOptions,
  ): Promise<TransferResult> {
    if (this.#closed) throw new ArmatureError("TRANSFER_FAILED", `transfer agent ${this.name} is closed`);
    if (local.length !== remote.length || local.length === 0) {
      throw new ArmatureError(
        "REQUEST_INVALID",
        `a transfer needs equal, non-empty descriptor lists (${local.length} vs ${remote.length})`,
      );
    }
    const pairs = local.map((l, i) => ({ local: l, remote: remote[i] as TransferDescriptor }));
    const peerName = pairs[0]?.remote.agent ?? "";
    for (const [i, pair] of pairs.entries()) {
      if (pair.local.length !== pair.remote.length) {
        throw new ArmatureError(
          "REQUEST_INVALID",
          `descriptor ${i}: ${pair.local.length} local bytes vs ${pair.remote.length} remote`,
        );
      }
      if (pair.local.agent !== this.name || pair.remote.agent !== peerName) {
        throw new ArmatureError("REQUEST_INVALID", `descriptor ${i} names another agent than the rest of its list`);
      }
    }
    const first = pairs[0] as { local: TransferDescriptor; remote: TransferDescriptor };
    const backend =
      options.backend ??
      chooseBackend(this.#metadata, this.#peer(peerName), this.#inProcess(peerName), first.local, first.remote);
    const started = performance.now();
    const retries = this.#options.retries ?? 2;
    let attempts = 0;
    for (;;) {
      attempts++;
      try {
        await Promise.all(pairs.map((p) => this.#movePair(op, backend, p.local, p.remote, options.signal)));
        break;
      } catch (error) {
        if (isArmatureError(error) && error.code === "TRANSFER_CORRUPTED" && attempts <= retries && !options.signal?.aborted) {
          continue;
        }
        throw error;
      }
    }
    if (options.notification !== undefined) await this.notify(peerName, options.notification, options.signal);
    const bytes = local.reduce((sum, d) => sum + d.length, 0);
    const result: TransferResult = { backend, bytes, seconds: (performance.now() - started) / 1000, attempts };
    this.#options.onTransfer?.(result, op);
    return result;
  }

  async #movePair(
    op: TransferOp,
    backend: BackendName,
    local: TransferDescriptor,
    remote: TransferDescriptor,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    signal?.throwIfAborted();
    const localAccess = regionAccess(this.regions.get(local.region, local.offset, local.length));
    if (backend === "tcp") {
      await this.#moveOverTcp(op, localAccess, local, remote, signal);
      return;
    }
    const remoteAccess = await this.#directAccess(backend, remote);
    try {
      if (op === "read") await copyRange(remoteAccess, remote.offset, localAccess, local.offset, local.length);
      else await copyRange(localAccess, local.offset, remoteAccess, remote.offset, local.length);
    } catch (error) {
      if (isArmatureError(error)) throw error;
      throw new ArmatureError("TRANSFER_FAILED", `${backend} transfer failed: ${(error as Error).message}`, { cause: error });
    }
  }

  async #directAccess(backend: BackendName, remote: TransferDescriptor): Promise<RangeAccess> {
    if (backend === "shm") {
      if (!remote.path)
        throw new ArmatureError("REQUEST_INVALID", `the shm backend needs a file descriptor; region ${remote.region} is memory`);
      // The path came from a peer: open it only inside that peer's shared folder on this host.
      const file = await confinedSharedFile(remote.path, dirname(this.sharedDir), remote.agent);
      checkRange(remote.region, file.size, remote.offset, remote.length);
      return fileAccess(file.path);
    }
    const owner = inProcess.get(remote.agent);
    if (!owner) throw new ArmatureError("TRANSFER_FAILED", `transfer agent ${remote.agent} is not in this process`);
    return regionAccess(owner.regions.get(remote.region, remote.offset, remote.length));
  }

  async #moveOverTcp(
    op: TransferOp,
    localAccess: RangeAccess,
    local: TransferDescriptor,
    remote: TransferDescriptor,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const connection = this.#connection(remote.agent);
    const view = localAccess.view(local.offset, local.length);
    if (op === "read") {
      const landing = view ?? Buffer.allocUnsafe(local.length);
      await connection.read(remote.region, remote.offset, landing, signal);
      if (!view) await localAccess.writeFrom(local.offset, landing);
    } else {
      let bytes = view;
      if (!bytes) {
        bytes = Buffer.allocUnsafe(local.length);
        await localAccess.readInto(local.offset, bytes);
      }
      await connection.write(remote.region, remote.offset, bytes, signal);
    }
  }

  #peer(name: string): AgentMetadata {
    const peer = this.#inProcess(name) ? inProcess.get(name)?.metadata : this.#peers.get(name);
    if (!peer) {
      throw new ArmatureError("TRANSFER_FAILED", `transfer agent ${name} is unknown here (not in discovery, or it left)`, {
        retryable: true,
      });
    }
    return peer;
  }

  #forcedRemote(name: string): boolean {
    return this.#forced.has(name);
  }

  #inProcess(name: string): boolean {
    return inProcess.has(name) && !this.#forcedRemote(name);
  }

  #connectionKey(name: string): string | undefined {
    const peer = this.#peers.get(name);
    return peer ? `${peer.address.host}:${peer.address.port}` : undefined;
  }

  #connection(name: string): TcpConnection {
    const peer = this.#peer(name);
    const key = `${peer.address.host}:${peer.address.port}`;
    let connection = this.#connections.get(key);
    if (!connection) {
      connection = new TcpConnection(peer.address.host, peer.address.port, this.#options.secret);
      this.#connections.set(key, connection);
    }
    return connection;
  }

  #deliver(from: string, message: string): void {
    for (const listener of this.#listeners) listener(from, message);
  }
}

/**
 * A listener beyond loopback must authenticate its peers: throws `CONFIG_INVALID` (naming
 * `--transfer-secret`) for a non-loopback `host` without a secret, or a secret that is too short.
 */
export function checkTransferSecret(host: string, secret: string | undefined): void {
  if (secret !== undefined && secret.length < MIN_SECRET_LENGTH) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `the transfer secret is ${secret.length} characters; give at least ${MIN_SECRET_LENGTH} with ${SECRET_HINT}`,
    );
  }
  if (secret === undefined && !isLoopback(host)) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `the KV transfer listener would bind ${host} without authentication; set ${SECRET_HINT}, or bind loopback with --transfer-host 127.0.0.1`,
    );
  }
}

/** An address this host can dial to reach a listener bound to `bound` (a wildcard: loopback). */
function dialable(bound: string): string {
  return bound === "0.0.0.0" || bound === "::" ? "127.0.0.1" : bound;
}

/** The address peers dial: the bound one, or for a wildcard bind this host's first external IPv4. */
export function advertisedAddress(bound: string): string {
  if (bound !== "0.0.0.0" && bound !== "::") return bound;
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) if (address.family === "IPv4" && !address.internal) return address.address;
  }
  return "127.0.0.1";
}
