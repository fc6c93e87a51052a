import { Metadata, status } from "@grpc/grpc-js";
import type { AccessDenial } from "../access/index.js";
import { toHttpError } from "../http-errors.js";

/** A gRPC error as grpc-js sends it (`google.rpc.Status`: code and message). */
export interface KserveGrpcError {
  readonly code: status;
  readonly details: string;
  readonly metadata?: Metadata | undefined;
  /** Ends a ModelStreamInfer call instead of answering one request with `error_message`. */
  readonly endsCall: boolean;
}

/** The gRPC code of each HTTP status `toHttpError` and the key check give. */
const CODES: Readonly<Record<number, status>> = {
  400: status.INVALID_ARGUMENT,
  401: status.UNAUTHENTICATED,
  404: status.NOT_FOUND,
  413: status.RESOURCE_EXHAUSTED,
  429: status.RESOURCE_EXHAUSTED,
  499: status.CANCELLED,
  503: status.UNAVAILABLE,
  504: status.DEADLINE_EXCEEDED,
};

/** Any error → its gRPC status, with the HTTP status it would have had (for the key's metrics). */
export function grpcStatusOf(error: unknown): { error: KserveGrpcError; httpStatus: number } {
  const http = toHttpError(error);
  return {
    httpStatus: http.status,
    error: { code: CODES[http.status] ?? status.INTERNAL, details: http.body.error.message, endsCall: false },
  };
}

/** An API key's refusal: UNAUTHENTICATED ends the call, RESOURCE_EXHAUSTED (a limit) carries `retry-after`. */
export function grpcDenial(denial: AccessDenial): KserveGrpcError {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(denial.headers)) metadata.set(key, value);
  return {
    code: CODES[denial.status] ?? status.PERMISSION_DENIED,
    details: denial.body.error.message,
    metadata,
    endsCall: denial.status === 401,
  };
}
