import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type Client,
  type ClientDuplexStream,
  credentials,
  loadPackageDefinition,
  Metadata,
  type ServiceError,
} from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

/** The KServe v2 specs the tests judge by (test/fixtures/kserve-v2/README.md). */
export const KSERVE_FIXTURES = fileURLToPath(new URL("../fixtures/kserve-v2/", import.meta.url));

type Callback = (error: ServiceError | null, response: Record<string, unknown>) => void;
type ServiceClient = Client & Record<string, (...args: unknown[]) => unknown>;

/**
 * A `GRPCInferenceService` client built from one of the spec protos: `open_inference_grpc.proto`
 * (the OIP's) or `grpc_service.proto` (Triton's, which has ModelStreamInfer), sending `key` as
 * `authorization: Bearer KEY` unless it is null.
 */
export class KserveGrpcClient {
  readonly #client: ServiceClient;

  constructor(proto: "open_inference_grpc.proto" | "grpc_service.proto", port: number) {
    const definition = loadSync(join(KSERVE_FIXTURES, proto), {
      keepCase: true,
      longs: Number,
      defaults: true,
      includeDirs: [KSERVE_FIXTURES],
    });
    const inference = loadPackageDefinition(definition).inference as Record<string, unknown>;
    const Service = inference.GRPCInferenceService as new (address: string, creds: unknown) => ServiceClient;
    this.#client = new Service(`127.0.0.1:${port}`, credentials.createInsecure());
  }

  /** Calls a unary method; `extra` is more metadata to send (a `traceparent`, say). */
  unary(
    method: string,
    request: unknown,
    key: string | null,
    extra: Readonly<Record<string, string>> = {},
  ): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const call = this.#client[method] as (r: unknown, m: Metadata, cb: Callback) => void;
      const metadata = metadataFor(key);
      for (const [name, value] of Object.entries(extra)) metadata.set(name, value);
      call.call(this.#client, request, metadata, (error, response) => (error ? reject(error) : resolve(response)));
    });
  }

  /** Sends `requests` on one ModelStreamInfer call, ends it, and resolves with every response. */
  async streamInfer(requests: readonly unknown[], key: string | null): Promise<Record<string, unknown>[]> {
    const open = this.#client.ModelStreamInfer as (m: Metadata) => ClientDuplexStream<unknown, Record<string, unknown>>;
    const stream = open.call(this.#client, metadataFor(key));
    const responses: Record<string, unknown>[] = [];
    stream.on("data", (response: Record<string, unknown>) => responses.push(response));
    const ended = new Promise<void>((resolve, reject) => {
      stream.on("end", resolve);
      stream.on("error", reject);
    });
    for (const request of requests) stream.write(request);
    stream.end();
    await ended;
    return responses;
  }

  close(): void {
    this.#client.close();
  }
}

function metadataFor(key: string | null): Metadata {
  const metadata = new Metadata();
  if (key !== null) metadata.set("authorization", `Bearer ${key}`);
  return metadata;
}
