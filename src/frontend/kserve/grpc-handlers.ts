import { randomUUID } from "node:crypto";
import type { Metadata, ServerDuplexStream, ServerUnaryCall, sendUnaryData } from "@grpc/grpc-js";
import { noTracing, RequestTrace, type TraceContext, traceContextFromHeaders } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import type { RequestGrant } from "../access/index.js";
import type { Generation, GenerationEnd } from "../generation.js";
import { DEADLINE_HEADER, PRIORITY_HEADER } from "../request-scheduling.js";
import { grpcStatusOf, type KserveGrpcError } from "./grpc-status.js";
import { type GrpcInferRequest, grpcInferFields, grpcOutput } from "./grpc-tensors.js";
import { modelMetadata, servedModel, serverMetadata } from "./kserve-metadata.js";
import { type LlmRequest, llmInferRequest } from "./llm-request.js";
import { collectText, type KserveDeps, runLlmRequest } from "./llm-run.js";

/** The API-key check of one call: a grant and its `end`, or the refusal as a gRPC error. */
export type CallAdmission =
  | { readonly kind: "granted"; readonly grant: RequestGrant | undefined; end(status: string): void }
  | { readonly kind: "denied"; readonly error: KserveGrpcError };

export interface GrpcHandlerContext {
  readonly deps: KserveDeps;
  /** Checks the call's key (`authorization: Bearer KEY` or `x-api-key` metadata); `generation` spends quota. */
  admit(metadata: Metadata, generation: boolean): CallAdmission;
  /** Cancelled generations when the server is forced down. */
  readonly shutdown: AbortSignal;
}

type Unary<Req, Res> = (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void;

/** `inference.GRPCInferenceService`'s methods, each answering as its REST twin does. */
export function grpcHandlers(context: GrpcHandlerContext): Record<string, unknown> {
  const { deps } = context;
  const withKey =
    <Req, Res>(answer: (request: Req, grant: RequestGrant | undefined) => Res): Unary<Req, Res> =>
    (call, callback) => {
      const admission = context.admit(call.metadata, false);
      if (admission.kind === "denied") return callback(admission.error);
      try {
        callback(null, answer(call.request, admission.grant));
        admission.end("200");
      } catch (error) {
        const status = grpcStatusOf(error);
        callback(status.error);
        admission.end(String(status.httpStatus));
      }
    };
  return {
    ServerLive: ((_call, callback) => callback(null, { live: true })) satisfies Unary<unknown, unknown>,
    ServerReady: ((_call, callback) => callback(null, { ready: deps.router.workers.all().length > 0 })) satisfies Unary<
      unknown,
      unknown
    >,
    ServerMetadata: withKey(() => serverMetadata()),
    ModelReady: withKey((request: { name: string; version: string }, grant) => {
      refuseVersion(request.version, "version");
      return { ready: servedModel(deps.router, request.name, grant) !== undefined };
    }),
    ModelMetadata: withKey((request: { name: string; version: string }, grant) => {
      refuseVersion(request.version, "version");
      const card = servedModel(deps.router, request.name, grant);
      if (!card) throw notServed(request.name);
      return { ...modelMetadata(card), versions: [], properties: {} };
    }),
    ModelInfer: ((call, callback) => {
      let answered = false;
      void infer(context, call.request, call.metadata, callOnCancel(call), false, async (request, generation) => {
        const result = await collectText(generation);
        if (result) {
          answered = true;
          callback(null, inferResponse(request, result.text, result.end.finishReason));
        }
        return result?.end;
      }).then((error) => {
        if (answered) return;
        callback(error ?? grpcStatusOf(new ArmatureError("REQUEST_CANCELLED", "the generation was cancelled")).error);
      });
    }) satisfies Unary<GrpcInferRequest, unknown>,
    ModelStreamInfer: (call: ServerDuplexStream<GrpcInferRequest, unknown>) => streamInfer(context, call),
  };
}

/**
 * `ModelStreamInfer`: the requests of one stream are served in turn. With `streaming` true each
 * piece of text is its own response, then one with the finish reason; without, one response. A
 * request that fails answers with `error_message` (Triton's way) and the stream goes on; a call
 * without a valid key ends with UNAUTHENTICATED.
 */
function streamInfer(context: GrpcHandlerContext, call: ServerDuplexStream<GrpcInferRequest, unknown>): void {
  const cancelled = callOnCancel(call);
  let queue = Promise.resolve();
  const write = async (message: unknown): Promise<void> => {
    if (cancelled.aborted || call.writableEnded) return;
    if (!call.write(message)) await new Promise<void>((resolve) => call.once("drain", resolve));
  };
  call.on("data", (request: GrpcInferRequest) => {
    queue = queue.then(async () => {
      if (cancelled.aborted || call.writableEnded) return;
      const error = await infer(context, request, call.metadata, cancelled, true, async (parsed, generation) => {
        if (!parsed.streaming) {
          const result = await collectText(generation);
          if (result)
            await write({ error_message: "", infer_response: inferResponse(parsed, result.text, result.end.finishReason) });
          return result?.end;
        }
        return streamPieces(parsed, generation, write);
      });
      if (!error) return;
      if (error.endsCall) call.emit("error", error);
      else await write({ error_message: error.details, infer_response: null });
    });
  });
  call.on("end", () => {
    void queue.then(() => {
      if (!call.writableEnded) call.end();
    });
  });
}

async function streamPieces(
  request: LlmRequest,
  generation: Generation,
  write: (message: unknown) => Promise<void>,
): Promise<GenerationEnd | undefined> {
  for await (const event of generation.events) {
    if (event.type === "text") {
      await write({ error_message: "", infer_response: inferResponse(request, event.text, "") });
      continue;
    }
    await write({ error_message: "", infer_response: inferResponse(request, "", event.finishReason) });
    return event;
  }
  return undefined;
}

/** Runs one inference request; resolves with its error (as a gRPC error), or undefined once answered. */
async function infer(
  context: GrpcHandlerContext,
  raw: GrpcInferRequest,
  metadata: Metadata,
  cancelled: AbortSignal,
  streamed: boolean,
  respond: (request: LlmRequest, generation: Generation) => Promise<GenerationEnd | undefined>,
): Promise<KserveGrpcError | undefined> {
  const admission = context.admit(metadata, true);
  if (admission.kind === "denied") return admission.error;
  const requestId = requestIdOf(metadata);
  const trace = new RequestTrace(context.deps.tracing ?? noTracing, traceContextFromMetadata(metadata));
  try {
    await runLlmRequest(context.deps, {
      endpoint: "kserve_infer",
      requestId,
      trace,
      access: admission.grant,
      signal: AbortSignal.any([cancelled, context.shutdown]),
      scheduling: schedulingOf(metadata),
      parse: () => {
        if (raw.model_name === "")
          throw new ArmatureError("REQUEST_INVALID", "'model_name' is required", { param: "model_name" });
        refuseVersion(raw.model_version, "model_version");
        const request = llmInferRequest(raw.model_name, grpcInferFields(raw));
        if (request.streaming && !streamed) {
          throw new ArmatureError(
            "NOT_SUPPORTED",
            "input 'streaming' true is not served by ModelInfer: call ModelStreamInfer for a stream of responses",
            { param: "inputs.streaming" },
          );
        }
        return request;
      },
      respond,
    });
    admission.end("200");
    return undefined;
  } catch (error) {
    const status = grpcStatusOf(error);
    admission.end(String(status.httpStatus));
    return status.error;
  }
}

function inferResponse(request: LlmRequest, text: string, finishReason: string): Record<string, unknown> {
  const values = { text_output: text, finish_reason: finishReason };
  return {
    model_name: request.model,
    model_version: "",
    id: request.id ?? "",
    parameters: {},
    outputs: request.outputs.map((name) => grpcOutput(name, values[name])),
    raw_output_contents: [],
  };
}

function refuseVersion(version: string, param: string): void {
  if (version !== "") {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `model versions are not served: each model has one version; leave '${param}' empty`,
      {
        param,
      },
    );
  }
}

function notServed(model: string): ArmatureError {
  return new ArmatureError("MODEL_NOT_FOUND", `model '${model}' is not served here (or your API key may not use it)`, {
    param: "model_name",
  });
}

/**
 * Aborted when the client cancels the call or its deadline (`grpc-timeout`) passes: either way the
 * generation stops on the worker. The server's own `--request-timeout` applies as well (llm-run.ts).
 */
function callOnCancel(call: {
  on(event: "cancelled", listener: () => void): unknown;
  getDeadline(): Date | number;
}): AbortSignal {
  const controller = new AbortController();
  call.on("cancelled", () => controller.abort(new ArmatureError("REQUEST_CANCELLED", "the client cancelled the call")));
  const deadline = call.getDeadline();
  const leftMs = (deadline instanceof Date ? deadline.getTime() : deadline) - Date.now();
  if (Number.isFinite(leftMs)) {
    setTimeout(
      () => controller.abort(new ArmatureError("REQUEST_TIMEOUT", "the call's deadline passed")),
      Math.max(0, leftMs),
    ).unref();
  }
  return controller.signal;
}

/** W3C trace context from the call's `traceparent` and `tracestate` metadata, as HTTP headers carry it. */
function traceContextFromMetadata(metadata: Metadata): TraceContext | undefined {
  const text = (key: string): string | undefined => {
    const values = metadata.get(key).filter((v): v is string => typeof v === "string");
    return values.length > 0 ? values.join(",") : undefined;
  };
  return traceContextFromHeaders({ traceparent: text("traceparent"), tracestate: text("tracestate") });
}

function requestIdOf(metadata: Metadata): string {
  const [value] = metadata.get("x-request-id");
  return typeof value === "string" && /^[A-Za-z0-9._-]{1,128}$/.test(value) ? value : randomUUID();
}

/** The call's `x-armature-priority` and `x-armature-deadline-ms` metadata, as headers (a key sent twice stays a list, and is refused). */
function schedulingOf(metadata: Metadata): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const key of [PRIORITY_HEADER, DEADLINE_HEADER]) {
    const values = metadata.get(key).map(String);
    if (values.length === 1) out[key] = values[0] as string;
    else if (values.length > 1) out[key] = values;
  }
  return out;
}
