import type { Logger } from "./logger.js";
import { noTracing } from "./no-tracing.js";
import type { Tracing } from "./tracing.js";

export interface TracingOptions {
  /** `--otlp-endpoint`; absent: `noTracing`. */
  readonly endpoint?: string | undefined;
  /** `service.name`: `armature-frontend`, `armature-worker`. */
  readonly serviceName: string;
  readonly logger: Logger;
}

/**
 * The OpenTelemetry binding when an endpoint is given (the SDK is loaded only then), else
 * `noTracing`. The endpoint must be an http(s) URL (the CLI checks it, naming the flag).
 */
export async function createTracing(options: TracingOptions): Promise<Tracing> {
  if (options.endpoint === undefined) return noTracing;
  const { createOtelTracing } = await import("./tracing-otel.js");
  return createOtelTracing({ endpoint: options.endpoint, serviceName: options.serviceName, logger: options.logger });
}
