import type { NatsConnection } from "@nats-io/transport-node";
import { ArmatureError } from "../protocol/index.js";
import { DirectoryObjectStore } from "./directory-object-store.js";
import { NATS_BUCKET_NAME, NatsObjectStore } from "./nats-object-store.js";
import { MemoryObjectStore, type ObjectStore } from "./object-store.js";
import { S3ObjectStore, type S3ObjectStoreOptions } from "./s3-object-store.js";

/** An object store URL, checked and taken apart. */
export type ObjectStoreLocation =
  | { readonly kind: "directory"; readonly root: string }
  | { readonly kind: "memory"; readonly name: string }
  | { readonly kind: "s3"; readonly options: S3ObjectStoreOptions }
  | { readonly kind: "nats"; readonly bucket: string };

/** What `openObjectStore` may need besides the URL. */
export interface OpenObjectStoreOptions {
  /** The bus connection that `nats://BUCKET` stores live on. */
  readonly nats?: NatsConnection | undefined;
}

const ACCEPTED_FORMS =
  "dir:///ABSOLUTE/PATH, memory://NAME, s3://BUCKET?endpoint=http://HOST:PORT&region=REGION&forcePathStyle=true " +
  "(every parameter optional) or nats://BUCKET";

// S3's rules for new buckets: 3 to 63 lower-case letters, digits, '.' and '-'.
const S3_BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const S3_PARAMETERS = new Set(["endpoint", "region", "forcePathStyle", "conditionalPut"]);

const memoryStores = new Map<string, MemoryObjectStore>();

/**
 * Takes an object store URL apart:
 * - `dir:///abs/path`: files under an absolute directory (percent-escapes decoded);
 * - `memory://NAME`: this process's memory;
 * - `s3://BUCKET?endpoint=URL&region=R&forcePathStyle=true&conditionalPut=true|false`: an S3 bucket,
 *   on AWS without `endpoint`; credentials come from the AWS environment variables;
 * - `nats://BUCKET`: a JetStream object store bucket on the bus connection (not a server address).
 *
 * Throws "CONFIG_INVALID" naming the URL and the accepted forms.
 */
export function parseObjectStoreUrl(url: string): ObjectStoreLocation {
  const match = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(url);
  if (!match) throw invalid(url, "it has no scheme://");
  const scheme = (match[1] as string).toLowerCase();
  const rest = match[2] as string;
  switch (scheme) {
    case "dir":
      return { kind: "directory", root: directoryRoot(url, rest) };
    case "memory":
      if (!/^[^/?#]+$/.test(rest)) throw invalid(url, "memory:// takes a name, without '/', '?' or '#'");
      return { kind: "memory", name: rest };
    case "s3":
      return { kind: "s3", options: s3Options(url, rest) };
    case "nats":
      if (!NATS_BUCKET_NAME.test(rest)) {
        throw invalid(url, "nats:// takes a bucket name of letters, digits, '-' and '_'; the server is the bus connection's");
      }
      return { kind: "nats", bucket: rest };
    default:
      throw invalid(url, `the scheme ${scheme}:// is not one of dir, memory, s3, nats`);
  }
}

/**
 * Opens the store an object store URL names (see `parseObjectStoreUrl`) and checks that it can be
 * used: a directory is created and written to, an S3 bucket and a NATS bucket are asked (a NATS
 * bucket is created when missing). `memory://NAME` gives the one store of that name in this process.
 *
 * Throws "CONFIG_INVALID" for a bad URL, a `nats://` URL without `options.nats`, an unwritable
 * directory, a missing S3 bucket or refused credentials; "TRANSFER_FAILED" (retryable) when the
 * endpoint or bus does not answer. Close the store when done.
 */
export async function openObjectStore(url: string, options: OpenObjectStoreOptions = {}): Promise<ObjectStore> {
  const location = parseObjectStoreUrl(url);
  switch (location.kind) {
    case "directory":
      return DirectoryObjectStore.open(location.root);
    case "memory": {
      const store = memoryStores.get(location.name) ?? new MemoryObjectStore(`memory ${location.name}`);
      memoryStores.set(location.name, store);
      return store;
    }
    case "s3":
      return S3ObjectStore.open(location.options);
    case "nats":
      if (!options.nats) {
        throw new ArmatureError(
          "CONFIG_INVALID",
          `the object store ${url} is a bucket on the bus, and no bus connection was given: connect to NATS (--bus nats://HOST:PORT) or use another object store URL`,
        );
      }
      return NatsObjectStore.open(options.nats, { bucket: location.bucket });
  }
}

function directoryRoot(url: string, rest: string): string {
  if (!rest.startsWith("/")) {
    throw invalid(url, "dir:// takes an absolute path after a third slash, e.g. dir:///var/cache/armature");
  }
  if (/[?#]/.test(rest)) throw invalid(url, "dir:// takes a path only, without '?' or '#'");
  try {
    return decodeURIComponent(rest);
  } catch {
    throw invalid(url, "the path has a broken percent-escape");
  }
}

function s3Options(url: string, rest: string): S3ObjectStoreOptions {
  const query = rest.indexOf("?");
  const bucket = query < 0 ? rest : rest.slice(0, query);
  if (!S3_BUCKET_NAME.test(bucket)) {
    throw invalid(url, "s3:// takes a bucket name (3 to 63 of a-z, 0-9, '.', '-'), with no path or credentials");
  }
  const parameters = new URLSearchParams(query < 0 ? "" : rest.slice(query + 1));
  for (const name of parameters.keys()) {
    if (!S3_PARAMETERS.has(name)) {
      throw invalid(url, `the parameter ${name} is not one of ${[...S3_PARAMETERS].join(", ")}`);
    }
  }
  const endpoint = parameters.get("endpoint") ?? undefined;
  if (endpoint !== undefined && !/^https?:\/\/[^/?#]+\/?$/.test(endpoint)) {
    throw invalid(url, "endpoint must be http://HOST:PORT or https://HOST:PORT");
  }
  return {
    bucket,
    endpoint,
    region: parameters.get("region") || undefined,
    forcePathStyle: flag(url, parameters, "forcePathStyle"),
    conditionalPut: flag(url, parameters, "conditionalPut"),
  };
}

function flag(url: string, parameters: URLSearchParams, name: string): boolean | undefined {
  const value = parameters.get(name);
  if (value === null) return undefined;
  if (value === "true") return true;
  if (value === "false") return false;
  throw invalid(url, `${name} must be true or false`);
}

function invalid(url: string, reason: string): ArmatureError {
  // Whatever sits before an '@' may be a secret: it is not echoed.
  const shown = url.replace(/\/\/[^/?#@]*@/, "//***@");
  return new ArmatureError(
    "CONFIG_INVALID",
    `the object store URL '${shown}' is not valid: ${reason}. Accepted: ${ACCEPTED_FORMS}`,
  );
}
