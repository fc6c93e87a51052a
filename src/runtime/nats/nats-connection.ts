import {
  AuthorizationError,
  connect,
  credsAuthenticator,
  type NatsConnection,
  type NodeConnectionOptions,
  TimeoutError,
} from "@nats-io/transport-node";
import { ArmatureError } from "../../protocol/index.js";
import { readFlagFile } from "../flag-file.js";
import { redactSecrets, redactUrl } from "../redact.js";

/**
 * How to authenticate to nats-server and secure the connection. Each field is a serve flag with an
 * `ARMATURE_*` twin; fields given here win over the same part of the `--bus` URL.
 */
export interface BusSecurityOptions {
  /** A NATS `.creds` file (user JWT and NKey seed) for servers run with accounts. `--bus-creds`. */
  readonly credsFile?: string | undefined;
  /** The server's `authorization { token }`. `--bus-token`; in the URL: `nats://TOKEN@HOST:PORT`. */
  readonly token?: string | undefined;
  /** `--bus-user`; in the URL: `nats://USER:PASSWORD@HOST:PORT`. */
  readonly user?: string | undefined;
  /** `--bus-password`. */
  readonly password?: string | undefined;
  /** PEM file of the CA that signed the server's certificate (default: the system's CAs). `--bus-tls-ca`. */
  readonly tlsCaFile?: string | undefined;
  /** PEM client certificate, for servers with `tls { verify: true }`. `--bus-tls-cert`. */
  readonly tlsCertFile?: string | undefined;
  /** PEM key of `tlsCertFile`. `--bus-tls-key`. */
  readonly tlsKeyFile?: string | undefined;
}

type AuthMethod = "none" | "user" | "token" | "creds";

/** A `--bus` URL and its security flags, checked and turned into nats.js options. */
export interface CompiledBusConnection {
  /** The URL without user information: safe to log. */
  readonly display: string;
  readonly options: NodeConnectionOptions;
  /** Passwords and tokens, scrubbed from any text that leaves this module. */
  readonly secrets: readonly string[];
  readonly auth: AuthMethod;
  readonly tls: boolean;
}

const TLS_SCHEMES = new Set(["tls:", "nats+tls:"]);

/**
 * Accepts `nats://`, `tls://` and `nats+tls://` (TLS required), with `USER:PASSWORD@` or `TOKEN@`.
 * Files are read here so that a missing one is named by its flag. Throws `CONFIG_INVALID`.
 */
export function compileBusConnection(url: string, security: BusSecurityOptions = {}): CompiledBusConnection {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ArmatureError("CONFIG_INVALID", `--bus must be nats://HOST:PORT (or tls://HOST:PORT), got ${redactUrl(url)}`);
  }
  if (parsed.protocol !== "nats:" && !TLS_SCHEMES.has(parsed.protocol)) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--bus must be nats://HOST:PORT, tls://HOST:PORT or nats+tls://HOST:PORT, got ${redactUrl(url)}`,
    );
  }
  const urlUser = parsed.username ? decodeURIComponent(parsed.username) : undefined;
  const urlPassword = parsed.password ? decodeURIComponent(parsed.password) : undefined;
  // NATS's convention: a user part without a password is a token.
  const user = security.user ?? (urlPassword !== undefined ? urlUser : undefined);
  const password = security.password ?? urlPassword;
  const token = security.token ?? (urlPassword === undefined && security.user === undefined ? urlUser : undefined);
  const given = [security.credsFile && "--bus-creds", token && "--bus-token", user && "--bus-user"].filter(Boolean);
  if (given.length > 1) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `give one way to authenticate to NATS, not ${given.join(" and ")} (flags or the --bus URL)`,
    );
  }
  if (password !== undefined && user === undefined) {
    throw new ArmatureError("CONFIG_INVALID", "--bus-password needs --bus-user (ARMATURE_BUS_USER) or a user in the --bus URL");
  }
  const options: NodeConnectionOptions = { servers: `${parsed.hostname}:${parsed.port || "4222"}`, name: "armature" };
  let auth: AuthMethod = "none";
  if (security.credsFile) {
    options.authenticator = credsAuthenticator(readFlagFile("bus-creds", security.credsFile));
    auth = "creds";
  } else if (token !== undefined) {
    options.token = token;
    auth = "token";
  } else if (user !== undefined) {
    options.user = user;
    options.pass = password ?? "";
    auth = "user";
  }
  const tls = TLS_SCHEMES.has(parsed.protocol) || Boolean(security.tlsCaFile || security.tlsCertFile || security.tlsKeyFile);
  if (tls) {
    if (Boolean(security.tlsCertFile) !== Boolean(security.tlsKeyFile)) {
      throw new ArmatureError("CONFIG_INVALID", "--bus-tls-cert and --bus-tls-key go together: give both or neither");
    }
    options.tls = {
      ...(security.tlsCaFile ? { ca: readFlagFile("bus-tls-ca", security.tlsCaFile).toString() } : {}),
      ...(security.tlsCertFile ? { cert: readFlagFile("bus-tls-cert", security.tlsCertFile).toString() } : {}),
      ...(security.tlsKeyFile ? { key: readFlagFile("bus-tls-key", security.tlsKeyFile).toString() } : {}),
    };
  }
  const secrets = [password, token, urlUser, urlPassword].filter((s): s is string => Boolean(s));
  const display = `${parsed.protocol}//${parsed.host}`;
  return { display, options, secrets, auth, tls };
}

/**
 * Connects to nats-server, reconnecting forever once connected; `options` override nats.js's (the
 * handshake `timeout` is 10 s unless given). A first connection that fails
 * throws `CONFIG_INVALID` saying what to fix: credentials the server refused name their flag, a TLS
 * failure names `--bus-tls-ca`; no message carries a password or token.
 */
export async function connectBus(
  bus: CompiledBusConnection,
  options: Partial<NodeConnectionOptions> = {},
): Promise<NatsConnection> {
  try {
    return await connect({ ...bus.options, maxReconnectAttempts: -1, timeout: 10_000, ...options });
  } catch (cause) {
    throw new ArmatureError("CONFIG_INVALID", redactSecrets(explainConnectFailure(bus, cause), bus.secrets), {
      cause: new Error(redactSecrets(String((cause as Error)?.message ?? cause), bus.secrets)),
    });
  }
}

const credentialFlags: Record<AuthMethod, string> = {
  none: "the server requires credentials: give --bus-user/--bus-password, --bus-token or --bus-creds, or put them in the --bus URL",
  user: "check --bus-user/--bus-password (ARMATURE_BUS_USER, ARMATURE_BUS_PASSWORD) or the URL",
  token: "check --bus-token (ARMATURE_BUS_TOKEN) or the token in the --bus URL",
  creds: "check the --bus-creds file (ARMATURE_BUS_CREDS)",
};

function explainConnectFailure(bus: CompiledBusConnection, cause: unknown): string {
  const at = `NATS at ${bus.display}`;
  if (cause instanceof AuthorizationError) return `nats rejected the credentials (${at}); ${credentialFlags[bus.auth]}`;
  const detail = tlsFailure(cause);
  if (detail) {
    return `TLS with ${at} failed (${detail}); give the CA that signed the server's certificate with --bus-tls-ca (ARMATURE_BUS_TLS_CA), and a client certificate with --bus-tls-cert/--bus-tls-key if the server verifies clients`;
  }
  if (bus.tls && cause instanceof TimeoutError) {
    // A server that verifies clients drops one without a certificate after the handshake, silently.
    return `${at} did not finish the TLS handshake in time: if it verifies clients, give --bus-tls-cert/--bus-tls-key (ARMATURE_BUS_TLS_CERT, ARMATURE_BUS_TLS_KEY) signed by a CA it trusts`;
  }
  const reason = String((cause as Error)?.message ?? cause);
  if (bus.tls) {
    return `cannot reach ${at} with TLS: is nats-server running there with tls configured? (--bus; nats://HOST:PORT for a server without TLS): ${reason}`;
  }
  return `cannot reach ${at}: is nats-server running there? (--bus): ${reason}`;
}

/** Node's TLS error codes (certificate checks, handshake alerts), or undefined when the failure is another one. */
export function tlsFailure(cause: unknown): string | undefined {
  for (let e: unknown = cause, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === "string" && /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)/.test(code)) return code;
  }
  return undefined;
}
