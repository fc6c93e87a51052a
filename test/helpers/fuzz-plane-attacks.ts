import { connect as connectTcp } from "node:net";
import { createInbox, headers, type NatsConnection } from "@nats-io/transport-node";
import type { Etcd3 } from "etcd3";
import type { AttackReport } from "./fuzz-http-attacks.js";
import { deepNesting, type Prng, pathsOf, randomJson, randomString, replaceAt, wrongValue } from "./fuzz-inputs.js";

/** What the plane attacks aim at. */
export interface PlaneTarget {
  readonly nc: NatsConnection;
  readonly etcd: Etcd3;
  /** The worker's id and its discovery record as etcd holds it. */
  readonly workerId: string;
  readonly workerRecord: Record<string, unknown>;
  readonly transfer: { readonly host: string; readonly port: number };
  /** Keys this fuzzer wrote under the discovery prefix, removed at the end. */
  readonly etcdKeys: Set<string>;
}

type PlaneAttack = (rng: Prng, target: PlaneTarget) => Promise<AttackReport>;

export const INSTANCE_PREFIX = "/armature/instances/";
const encoder = new TextEncoder();
const fuzzId = (rng: Prng): string => `fuzz-${rng.int(1e9)}`;

/** Publishes, dropping what the client itself refuses (over max_payload, an invalid subject): the server never sees those. */
function publish(
  nc: NatsConnection,
  subject: string,
  data: Uint8Array,
  options?: Parameters<NatsConnection["publish"]>[2],
): void {
  try {
    nc.publish(subject, data, options);
  } catch {
    // nothing was sent
  }
}
const u64 = (rng: Prng): unknown => ({ $u64: String(rng.int(2 ** 31)) });

/** A kv-event batch that is well formed, for mutating. */
const kvBatch = (rng: Prng, workerId: string): Record<string, unknown> => ({
  type: "kv-event-batch",
  workerId,
  eventId: 1 + rng.int(1000),
  events: [
    { type: "kv-block-stored", parentHash: null, blocks: [{ blockHash: u64(rng), tokensHash: u64(rng) }], blockSize: 16 },
    { type: "kv-block-removed", blockHashes: [u64(rng)] },
    { type: "kv-cache-cleared" },
  ],
});

const workerLoad = (workerId: string): Record<string, unknown> => ({
  type: "worker-load",
  workerId,
  activeRequests: 1,
  waitingRequests: 0,
  activeKvBlocks: 3,
  totalKvBlocks: 100,
});

const activeSequence = (rng: Prng, workerId: string): Record<string, unknown> => ({
  type: "active-sequence",
  routerId: "router-fuzz",
  requestId: `r${rng.int(1e6)}`,
  workerId,
  action: rng.pick(["add", "prefill-done", "free"]),
  prefillTokens: 10,
  decodeBlocks: 1,
});

/** A well-formed message of `shape` with one to three of its fields set to wrong values. */
function mutated(rng: Prng, shape: Record<string, unknown>): { value: unknown; detail: string } {
  let value: unknown = shape;
  const paths = pathsOf(shape);
  const changed: string[] = [];
  for (let i = 1 + rng.int(3); i > 0; i--) {
    const path = rng.pick(paths);
    const replacement = wrongValue(
      rng,
      path.reduce<unknown>((v, k) => (v as Record<string, unknown>)?.[k], value),
    );
    value = replaceAt(value, path, replacement);
    changed.push(`${path.join(".")}=${(JSON.stringify(replacement) ?? "undefined").slice(0, 60)}`);
  }
  return { value, detail: changed.join(", ") };
}

/** Bytes that are not a well-formed message: not JSON, bad `$u64`, huge, deep, or a mutated real shape. */
function garbagePayload(rng: Prng, shape: Record<string, unknown>): { bytes: Uint8Array; detail: string } {
  const variant = rng.int(9);
  const json = (value: unknown, detail: string) => ({ bytes: encoder.encode(JSON.stringify(value) ?? "null"), detail });
  switch (variant) {
    case 0:
      return { bytes: rng.bytes(rng.int(2000)), detail: "random bytes" };
    case 1:
      return json(randomJson(rng, 4), "random JSON");
    case 2:
      return json({ ...shape, [rng.pick(Object.keys(shape))]: { $u64: rng.pick(["abc", "", "1.5", "-"]) } }, "bad $u64");
    case 3:
      return json({ $u64: "abc" }, '{"$u64":"abc"}');
    case 4: {
      const key = rng.pick(Object.keys(shape));
      return json({ ...shape, [key]: Array.from({ length: 100_000 }, () => 1) }, `100k-element array in ${key}`);
    }
    case 5:
      return {
        bytes: encoder.encode(deepNesting(rng.pick([1000, 100_000]), rng.pick(["array", "object"] as const))),
        detail: "deep nesting",
      };
    case 6: {
      const text = JSON.stringify(shape);
      return { bytes: encoder.encode(text.slice(0, rng.int(text.length))), detail: "truncated JSON" };
    }
    case 7: {
      const { [rng.pick(Object.keys(shape))]: _dropped, ...rest } = shape;
      return json(rest, "a field missing");
    }
    default: {
      const { value, detail } = mutated(rng, shape);
      return json(value, `mutated: ${detail}`);
    }
  }
}

const eventGarbage: PlaneAttack = async (rng, t) => {
  const count = 1 + rng.int(30);
  const details: string[] = [];
  for (let i = 0; i < count; i++) {
    const worker = rng.chance(0.7) ? t.workerId : fuzzId(rng);
    const choice = rng.int(4);
    const subject = [`armature.kv_events.${worker}`, `armature.load.${worker}`, "armature.active_sequences"][
      choice % 3
    ] as string;
    const shape = choice === 1 ? workerLoad(worker) : choice === 2 ? activeSequence(rng, worker) : kvBatch(rng, worker);
    // A batch after an id gap (with anything wrong in it): the router's recovery must not trip over it.
    if (choice === 3) shape.eventId = 1_000_000 + rng.int(1000);
    const { bytes, detail } = garbagePayload(rng, shape);
    publish(t.nc, subject, bytes);
    details.push(`${subject}: ${detail}`);
  }
  await t.nc.flush();
  return { input: `${count} messages: ${details.slice(0, 4).join("; ")}`, problems: [] };
};

/** A request-plane call start with garbage in it, on a worker's, its KV query's or the router's address. */
async function garbageCall(rng: Prng, t: PlaneTarget): Promise<{ detail: string; problem?: string }> {
  const addresses = [t.workerId, `${t.workerId}.kv_events_query`, "armature_router", fuzzId(rng)];
  const which = rng.int(addresses.length);
  const address = addresses[which] as string;
  const stream = createInbox();
  const oddSubject = rng.pick(["", ">", "a b", "armature.>", "x".repeat(100_000), 5, null, stream]);
  const payloads: Record<string, unknown> = {
    "generate-request": {
      type: "generate-request",
      requestId: "fuzz",
      model: "armature-mocker",
      tokenIds: [1, 2, 3],
      sampling: { temperature: 0 },
      maxTokens: 2,
    },
    "kv-events-query": { type: "kv-events-query", fromEventId: 0 },
    "route-query": { type: "route-query", model: "armature-mocker", tokenIds: [1, 2, 3], candidates: [t.workerId] },
  };
  const kinds = Object.keys(payloads);
  // Mostly the kind the address serves, so the payload reaches its schema.
  const shape = payloads[(rng.chance(0.7) && kinds[which]) || rng.pick(kinds)] as Record<string, unknown>;
  const variant = rng.int(6);
  let start: Uint8Array;
  let detail: string;
  if (variant === 0) {
    start = rng.bytes(rng.int(500));
    detail = "random bytes";
  } else if (variant === 1) {
    start = encoder.encode(JSON.stringify(randomJson(rng, 3)) ?? "null");
    detail = "random JSON";
  } else if (variant === 2) {
    start = encoder.encode(
      JSON.stringify({
        payload: shape,
        stream: oddSubject,
        cancel: rng.pick([oddSubject, `${stream}.cancel`]),
        // Window 0 parks the handler, so its heartbeat timer publishes to the odd subject.
        window: rng.pick([undefined, 0, 1]),
      }),
    );
    detail = `odd stream subject ${JSON.stringify(oddSubject)?.slice(0, 40)}`;
  } else if (variant === 3) {
    const payload = garbagePayload(rng, shape);
    start = encoder.encode(
      `{"payload":${new TextDecoder().decode(payload.bytes)},"stream":"${stream}","cancel":"${stream}.cancel"}`,
    );
    detail = `payload ${payload.detail}`;
  } else if (variant === 4) {
    start = encoder.encode(JSON.stringify({ payload: shape, stream, cancel: `${stream}.cancel`, window: wrongValue(rng, 4) }));
    detail = "odd credit window";
  } else {
    start = encoder.encode(JSON.stringify({ payload: shape, stream, cancel: `${stream}.cancel` }));
    detail = "a well-formed start, then garbage credit and cancels";
  }
  const sub = t.nc.subscribe(stream);
  const received: string[] = [];
  const reading = (async () => {
    for await (const msg of sub) received.push(msg.string().slice(0, 80));
  })();
  let accepted = false;
  try {
    if (rng.chance(0.2)) publish(t.nc, `armature.rpc.${address}`, start);
    else {
      accepted = await Promise.resolve()
        .then(() => t.nc.request(`armature.rpc.${address}`, start, { timeout: 1000 }))
        .then(
          () => true,
          () => false,
        );
    }
    for (let i = rng.int(4); i > 0; i--) {
      publish(t.nc, `${stream}.cancel`, garbagePayload(rng, { t: "credit", n: 1 }).bytes);
    }
    for (let waited = 0; waited < 1500 && received.length === 0; waited += 100) await new Promise((r) => setTimeout(r, 100));
  } finally {
    sub.unsubscribe();
    await reading;
  }
  const line = `armature.rpc.${address}: ${detail}; ${accepted ? "accepted" : "not accepted"}, heard ${received.length} stream messages`;
  // A call accepted on a stream the caller listens to must be answered, if only with an error.
  const answerable = accepted && variant >= 3;
  return answerable && received.length === 0
    ? { detail: line, problem: "an accepted call went silent for 1.5 s" }
    : { detail: line };
}

const rpcGarbage: PlaneAttack = async (rng, t) => {
  const calls = await Promise.all([0, 1, 2].map(() => garbageCall(rng, t)));
  return {
    input: calls.map((c) => c.detail).join(" | "),
    problems: calls.flatMap((c) => (c.problem ? [`${c.problem}: ${c.detail}`] : [])),
  };
};

/** Malformed stream messages published to the inboxes of calls in flight (sniffed from their starts). */
export async function injectIntoInboxes(rng: Prng, nc: NatsConnection, during: Promise<unknown>): Promise<string[]> {
  const injected: string[] = [];
  const sniffer = nc.subscribe("armature.rpc.>", {
    callback: (_error, msg) => {
      let stream: unknown;
      try {
        stream = (JSON.parse(msg.string()) as { stream?: unknown }).stream;
      } catch {
        return;
      }
      if (typeof stream !== "string" || stream === "" || /[\s*>]/.test(stream)) return;
      const delay = rng.int(50);
      const kind = rng.int(7);
      setTimeout(() => {
        if (nc.isClosed()) return;
        if (kind === 0) publish(nc, stream, rng.bytes(1 + rng.int(200)));
        else if (kind === 1) publish(nc, stream, encoder.encode(JSON.stringify(randomJson(rng, 3)) ?? "null"));
        else if (kind === 2) publish(nc, stream, encoder.encode(JSON.stringify({ t: "item", v: randomJson(rng, 3) })));
        else if (kind === 3) {
          const error = {
            t: "error",
            code: rng.pick([randomString(rng, 20), 5, null, "NOT_A_CODE"]),
            message: randomJson(rng, 1),
            retryable: "yes",
          };
          publish(nc, stream, encoder.encode(JSON.stringify(error)));
        } else if (kind === 4) {
          const h = headers();
          h.set("Armature-Part", rng.pick(["1/2", "2/2", "0/0", "1/1000000000", "abc", "-1/3", "1/2"]));
          publish(nc, stream, rng.bytes(1 + rng.int(100)), { headers: h });
        } else if (kind === 5) publish(nc, stream, encoder.encode(JSON.stringify({ t: "ping", p: "x", w: 5 })));
        else
          publish(
            nc,
            `${stream}.cancel`,
            encoder.encode(JSON.stringify({ t: "credit", n: rng.pick([-1, 1e300, "x", 2 ** 53]) })),
          );
        injected.push(`kind ${kind} into ${msg.subject}`);
      }, delay);
    },
  });
  try {
    await during;
  } finally {
    sniffer.unsubscribe();
  }
  return injected;
}

const discoveryGarbage: PlaneAttack = async (rng, t) => {
  const id = rng.pick([fuzzId(rng), "", "../x", "a b", "x".repeat(2000), `${fuzzId(rng)}/nested`]);
  const key = `${INSTANCE_PREFIX}${id}`;
  const variant = rng.int(4);
  let value: Uint8Array;
  let detail: string;
  if (variant === 0) {
    value = rng.bytes(rng.int(3000));
    detail = "random bytes";
  } else if (variant === 1) {
    value = garbagePayload(rng, { ...t.workerRecord, id }).bytes;
    detail = "a garbled record";
  } else if (variant === 2) {
    // Well formed apart from its id, which names another instance: it must not be taken.
    value = encoder.encode(JSON.stringify({ ...t.workerRecord, id: t.workerId }));
    detail = "the worker's record under another key";
  } else {
    const { value: record, detail: changes } = mutated(rng, { ...t.workerRecord, id });
    // A role no worker has keeps the record invalid even when the mutation happens to be valid.
    value = encoder.encode(JSON.stringify({ ...(record as object), role: "evil" }));
    detail = `mutated record: ${changes}`;
  }
  t.etcdKeys.add(key);
  await t.etcd.put(key).value(Buffer.from(value));
  if (rng.chance(0.3)) {
    await t.etcd.delete().key(key);
    t.etcdKeys.delete(key);
  }
  return { input: `etcd put ${key.slice(0, 80)}: ${detail}`, problems: [] };
};

/** A frame: `[u32 LE header length][header JSON][payload][u64 checksum]`, any part of it wrong. */
function transferBytes(rng: Prng): { bytes: Buffer; detail: string } {
  const u32 = (n: number): Buffer => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n >>> 0);
    return b;
  };
  const frame = (header: unknown, payload: Buffer = Buffer.alloc(0), trailer: Buffer = rng.bytes(8)): Buffer => {
    const h = Buffer.from(JSON.stringify(header));
    return Buffer.concat([u32(h.length), h, payload, trailer]);
  };
  const variants: [string, () => Buffer][] = [
    ["random bytes", () => rng.bytes(1 + rng.int(65_536))],
    ["header length 0xffffffff", () => Buffer.concat([u32(0xffffffff), rng.bytes(100)])],
    ["header length 1 MiB", () => Buffer.concat([u32(1 << 20), rng.bytes(1000)])],
    ["header not JSON", () => Buffer.concat([u32(10), Buffer.from("not json!!")])],
    ["header a random JSON", () => frame(randomJson(rng, 3))],
    ["write with a huge length", () => frame({ op: "write", id: 1, region: "r", offset: 0, length: 2 ** 52 }, rng.bytes(1000))],
    ["write with negative offset", () => frame({ op: "write", id: 1, region: "r", offset: -5, length: 8 }, rng.bytes(8))],
    ["read of a huge length", () => frame({ op: "read", id: 2, region: "r", offset: 0, readLength: 2 ** 50 })],
    ["data before hello", () => frame({ op: "data", id: 3, length: 16 }, rng.bytes(16))],
    ["auth with wrong types", () => frame({ op: "auth", id: 0, nonce: 5, proof: ["x"] })],
    [
      "truncated frame",
      () => frame({ op: "write", id: 1, region: "r", offset: 0, length: 4096 }, rng.bytes(100), Buffer.alloc(0)),
    ],
    [
      "a thousand error frames",
      () => Buffer.concat(Array.from({ length: 1000 }, (_, i) => frame({ op: "error", id: i, code: "X", message: "m" }))),
    ],
    ["notify with a huge message", () => frame({ op: "notify", id: 1, from: "x", message: "m".repeat(60_000) })],
  ];
  const [detail, make] = rng.pick(variants);
  return { bytes: make(), detail };
}

const transferGarbage: PlaneAttack = async (rng, t) => {
  const { bytes, detail } = transferBytes(rng);
  const split = rng.chance(0.3);
  const closedByServer = await new Promise<boolean>((resolve) => {
    const socket = connectTcp(t.transfer.port, t.transfer.host);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(false);
    }, 1500);
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(true);
    });
    socket.once("connect", () => {
      if (split) {
        for (let at = 0; at < bytes.length; at += 7) socket.write(bytes.subarray(at, at + 7));
      } else socket.write(bytes);
      if (rng.chance(0.3)) socket.end();
    });
  });
  return {
    input: `transfer port: ${detail}${split ? " in 7-byte pieces" : ""}; ${closedByServer ? "closed" : "left open"}`,
    problems: [],
  };
};

/** Every plane attack, by name. */
export const planeAttacks: Readonly<Record<string, PlaneAttack>> = {
  eventGarbage,
  rpcGarbage,
  discoveryGarbage,
  transferGarbage,
};
