import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { PrometheusMeter } from "../observability/index.js";
import { ArmatureError } from "../protocol/index.js";
import type { InvalidMessages } from "../runtime/index.js";

export interface MetricsEndpoint {
  /** `http://host:port`. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * `--metrics-port`: a process that serves no HTTP API (`armature worker`) answers Prometheus on its
 * own port: `GET /metrics` (its meter, with the plane messages it dropped by kind) and `GET /health`.
 * A taken port fails the start, naming the flag.
 */
export async function startMetricsEndpoint(options: {
  readonly host: string;
  readonly port: number;
  readonly meter: PrometheusMeter;
  readonly invalidMessages: InvalidMessages;
}): Promise<MetricsEndpoint> {
  const dropped = options.meter.gauge(
    "plane_messages_dropped",
    "Malformed messages from the event plane dropped since start, by the kind they claimed",
    ["kind"],
  );
  const server: Server = createServer((req, res) => {
    const send = (status: number, type: string, body: string): void => {
      res.writeHead(status, { "content-type": type }).end(body);
    };
    req.resume();
    if (req.method !== "GET") return send(405, "text/plain", "only GET\n");
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/health") return send(200, "application/json", '{"status":"ok"}\n');
    if (path !== "/metrics") return send(404, "text/plain", "GET /metrics or GET /health\n");
    for (const [kind, count] of options.invalidMessages.counts) dropped.set({ kind }, count);
    options.meter.registry.metrics().then(
      (text) => send(200, options.meter.contentType, text),
      (error: unknown) => send(500, "text/plain", `${(error as Error).message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new ArmatureError(
          "CONFIG_INVALID",
          error.code === "EADDRINUSE"
            ? `port ${options.port} on ${options.host} is already in use; choose another with --metrics-port (ARMATURE_METRICS_PORT), or 0 for a free one`
            : `cannot serve metrics on ${options.host}:${options.port} (${error.message}); check --host and --metrics-port`,
          { cause: error },
        ),
      ),
    );
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `--metrics-port` belongs to `armature worker`: the HTTP API serves `/metrics` on `--port`. */
export function refuseMetricsPort(command: "serve" | "frontend" | "router", metricsPort: number | undefined): void {
  if (metricsPort === undefined) return;
  throw new ArmatureError(
    "CONFIG_INVALID",
    command === "router"
      ? "--metrics-port is for armature worker: armature router serves no metrics yet"
      : `--metrics-port is for armature worker: armature ${command} serves GET /metrics on --port`,
  );
}
