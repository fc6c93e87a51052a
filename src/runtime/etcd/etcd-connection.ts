import {
  EtcdAuthenticationFailedError,
  EtcdInvalidAuthTokenError,
  EtcdPermissionDeniedError,
  GRPCInvalidArgumentError,
  GRPCUnauthenticatedError,
  type IOptions,
} from "etcd3";
import { ArmatureError } from "../../protocol/index.js";
import { readFlagFile } from "../flag-file.js";
import { redactSecrets, redactUrl } from "../redact.js";

/**
 * How to authenticate to etcd and secure the connection. Each field is a serve flag with an
 * `ARMATURE_*` twin; fields given here win over the same part of the `--discovery` URL.
 */
export interface DiscoverySecurityOptions {
  /** `--discovery-user`; in the URL: `etcd://USER:PASSWORD@HOST:PORT`. */
  readonly user?: string | undefined;
  /** `--discovery-password`. */
  readonly password?: string | undefined;
  /** PEM file of the CA that signed etcd's certificate (default: the system's CAs). `--discovery-tls-ca`. */
  readonly tlsCaFile?: string | undefined;
  /** PEM client certificate, for etcd with `--client-cert-auth`. `--discovery-tls-cert`. */
  readonly tlsCertFile?: string | undefined;
  /** PEM key of `tlsCertFile`. `--discovery-tls-key`. */
  readonly tlsKeyFile?: string | undefined;
}

/** A `--discovery` URL and its security flags, checked and turned into etcd3 options. */
export interface CompiledDiscoveryConnection {
  /** The URL without user information: safe to log. */
  readonly display: string;
  readonly options: IOptions;
  readonly secrets: readonly string[];
  readonly tls: boolean;
  readonly authenticated: boolean;
}

const TLS_SCHEMES = new Set(["etcds:", "https:"]);

/**
 * Accepts `etcd://` and `http://` (plain), `etcds://` and `https://` (TLS), with `USER:PASSWORD@`.
 * Throws `CONFIG_INVALID` naming the flag to fix.
 */
export function compileDiscoveryConnection(url: string, security: DiscoverySecurityOptions = {}): CompiledDiscoveryConnection {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--discovery must be etcd://HOST:PORT (or etcds://HOST:PORT), got ${redactUrl(url)}`,
    );
  }
  if (!["etcd:", "http:"].includes(parsed.protocol) && !TLS_SCHEMES.has(parsed.protocol)) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--discovery must be etcd://HOST:PORT or etcds://HOST:PORT (TLS), got ${redactUrl(url)}`,
    );
  }
  const urlUser = parsed.username ? decodeURIComponent(parsed.username) : undefined;
  const urlPassword = parsed.password ? decodeURIComponent(parsed.password) : undefined;
  const user = security.user ?? urlUser;
  const password = security.password ?? urlPassword;
  if ((user === undefined) !== (password === undefined)) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      "--discovery-user and --discovery-password go together (ARMATURE_DISCOVERY_USER, ARMATURE_DISCOVERY_PASSWORD, or etcd://USER:PASSWORD@HOST:PORT)",
    );
  }
  const tls = TLS_SCHEMES.has(parsed.protocol) || Boolean(security.tlsCaFile || security.tlsCertFile || security.tlsKeyFile);
  if (Boolean(security.tlsCertFile) !== Boolean(security.tlsKeyFile)) {
    throw new ArmatureError("CONFIG_INVALID", "--discovery-tls-cert and --discovery-tls-key go together: give both or neither");
  }
  const port = parsed.port || "2379";
  const options: IOptions = {
    hosts: `${tls ? "https" : "http"}://${parsed.hostname}:${port}`,
    ...(user !== undefined && password !== undefined ? { auth: { username: user, password } } : {}),
  };
  if (tls && security.tlsCaFile) {
    options.credentials = {
      rootCertificate: readFlagFile("discovery-tls-ca", security.tlsCaFile),
      ...(security.tlsCertFile ? { certChain: readFlagFile("discovery-tls-cert", security.tlsCertFile) } : {}),
      ...(security.tlsKeyFile ? { privateKey: readFlagFile("discovery-tls-key", security.tlsKeyFile) } : {}),
    };
  } else if (tls && security.tlsCertFile) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      "--discovery-tls-cert needs --discovery-tls-ca, the CA that signed etcd's certificate",
    );
  }
  return {
    display: `${tls ? "etcds" : "etcd"}://${parsed.hostname}:${port}`,
    options,
    secrets: [password, urlPassword].filter((s): s is string => Boolean(s)),
    tls,
    authenticated: user !== undefined,
  };
}

/** Turns the failure of the first call to etcd into a `CONFIG_INVALID` that says which flag to fix. */
export function explainDiscoveryFailure(discovery: CompiledDiscoveryConnection, cause: unknown): ArmatureError {
  const at = `etcd at ${discovery.display}`;
  let message: string;
  if (cause instanceof EtcdAuthenticationFailedError) {
    message = `etcd rejected the credentials (${at}); check --discovery-user/--discovery-password (ARMATURE_DISCOVERY_USER, ARMATURE_DISCOVERY_PASSWORD) or the URL`;
  } else if (
    cause instanceof EtcdPermissionDeniedError ||
    cause instanceof EtcdInvalidAuthTokenError ||
    cause instanceof GRPCUnauthenticatedError ||
    (!discovery.authenticated && cause instanceof GRPCInvalidArgumentError)
  ) {
    message = discovery.authenticated
      ? `${at} refused access to armature's keys; the user given with --discovery-user needs read and write on /armature/`
      : `${at} requires credentials: give --discovery-user/--discovery-password or etcd://USER:PASSWORD@HOST:PORT`;
  } else if (cause instanceof DiscoveryTimeout) {
    message = discovery.tls
      ? `no answer from ${at} over TLS within ${cause.timeoutMs} ms: is etcd running there with TLS, and does --discovery-tls-ca (ARMATURE_DISCOVERY_TLS_CA) hold the CA that signed its certificate? (--discovery)`
      : `no answer from ${at} within ${cause.timeoutMs} ms: is etcd running there, without TLS? (--discovery; etcds://HOST:PORT for TLS)`;
  } else {
    const hint = discovery.tls
      ? "is etcd running there, and does --discovery-tls-ca (ARMATURE_DISCOVERY_TLS_CA) hold the CA that signed its certificate?"
      : "is etcd running there, without TLS? (etcds://HOST:PORT if it serves TLS)";
    message = `cannot reach ${at}: ${hint} (--discovery): ${String((cause as Error)?.message ?? cause)}`;
  }
  return new ArmatureError("CONFIG_INVALID", redactSecrets(message, discovery.secrets), {
    cause: new Error(redactSecrets(String((cause as Error)?.message ?? cause), discovery.secrets)),
  });
}

/** The first call to etcd took longer than the connect timeout. */
export class DiscoveryTimeout extends Error {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`etcd did not answer within ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}
