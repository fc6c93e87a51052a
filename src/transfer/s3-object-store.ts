import { randomUUID } from "node:crypto";
import type { GetObjectCommandOutput, S3Client } from "@aws-sdk/client-s3";
import { ArmatureError } from "../protocol/index.js";
import { checkObjectKey, missingRange, type ObjectEntry, type ObjectStore, objectMissing } from "./object-store.js";

/** Where and how to reach a bucket of AWS S3 or of an S3-compatible server (MinIO, Ceph, s3rver). */
export interface S3ObjectStoreOptions {
  readonly bucket: string;
  /** The server's URL, e.g. `http://127.0.0.1:9000`. Default: AWS S3 in `region`. */
  readonly endpoint?: string | undefined;
  /** Default: `AWS_REGION`, then `AWS_DEFAULT_REGION`, then "us-east-1". */
  readonly region?: string | undefined;
  /** Address buckets as `endpoint/bucket` rather than `bucket.endpoint` (MinIO, s3rver). Default false. */
  readonly forcePathStyle?: boolean | undefined;
  /**
   * Default: the SDK's chain: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
   * then `AWS_PROFILE` and the shared files, then the container's or instance's role.
   */
  readonly credentials?:
    | { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string }
    | undefined;
  /**
   * Whether the server honours `If-None-Match: *` on PutObject (AWS S3 since 2024, MinIO, R2; not
   * s3rver). Default: found out by `open`, which writes an empty `.armature-probe/<uuid>` object
   * twice and deletes it; give it (or `conditionalPut=` in the URL) to skip the probe, e.g. where
   * the credentials may not delete.
   */
  readonly conditionalPut?: boolean | undefined;
  /** Default 3000. */
  readonly connectTimeoutMs?: number | undefined;
  /** Default 30000. */
  readonly requestTimeoutMs?: number | undefined;
  /** Tries per request, the SDK retrying throttling, 5xx and network errors. Default 3. */
  readonly maxAttempts?: number | undefined;
  /** Keys per ListObjectsV2 page. Default 1000 (S3's most). */
  readonly listPageSize?: number | undefined;
}

// Loaded by `open`: the SDK takes a few hundred milliseconds to import, which processes without an
// S3 store should not pay.
type S3Sdk = typeof import("@aws-sdk/client-s3");

interface CompiledS3Options {
  readonly bucket: string;
  readonly endpoint: string | undefined;
  readonly listPageSize: number;
  readonly conditionalPut: boolean | undefined;
  readonly display: string;
}

function compileS3ObjectStoreOptions(
  sdk: S3Sdk,
  options: S3ObjectStoreOptions,
): {
  compiled: CompiledS3Options;
  client: S3Client;
} {
  const endpoint = options.endpoint;
  const client = new sdk.S3Client({
    region: options.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? "us-east-1",
    ...(endpoint === undefined ? {} : { endpoint }),
    forcePathStyle: options.forcePathStyle ?? false,
    ...(options.credentials ? { credentials: options.credentials } : {}),
    maxAttempts: options.maxAttempts ?? 3,
    requestHandler: {
      connectionTimeout: options.connectTimeoutMs ?? 3000,
      requestTimeout: options.requestTimeoutMs ?? 30_000,
    },
    // S3-compatible servers often refuse the SDK's default CRC trailers; send checksums only where required.
    ...(endpoint === undefined
      ? {}
      : { requestChecksumCalculation: "WHEN_REQUIRED", responseChecksumValidation: "WHEN_REQUIRED" }),
  });
  return {
    client,
    compiled: {
      bucket: options.bucket,
      endpoint,
      listPageSize: options.listPageSize ?? 1000,
      conditionalPut: options.conditionalPut,
      display: `s3 bucket ${options.bucket} at ${endpoint ?? "AWS"}`,
    },
  };
}

/**
 * Objects in an S3 bucket. `putIfAbsent` asks HeadObject first (a present block costs no upload),
 * then PutObject with `If-None-Match: *` where the server honours it: atomic, and
 * `atomicPutIfAbsent` is true. Where it does not (s3rver), a writer racing between another's
 * HeadObject and PutObject overwrites the same key, both are told true, and the object is the last
 * writer's, whole. Ranged `write` reads, modifies and rewrites the whole object (S3 objects are
 * immutable): slow, last writer wins.
 */
export class S3ObjectStore implements ObjectStore {
  readonly name: string;
  readonly atomicPutIfAbsent: boolean;
  readonly #sdk: S3Sdk;
  readonly #client: S3Client;
  readonly #options: CompiledS3Options;

  /** Use `open`, which checks the bucket first. */
  private constructor(sdk: S3Sdk, client: S3Client, options: CompiledS3Options, conditionalPut: boolean) {
    this.#sdk = sdk;
    this.#client = client;
    this.#options = options;
    this.name = options.display;
    this.atomicPutIfAbsent = conditionalPut;
  }

  /**
   * Checks that the bucket answers (HeadBucket) and, unless `conditionalPut` is given, whether the
   * server honours conditional puts. Throws "TRANSFER_FAILED" (retryable) when the endpoint can't be
   * reached, "CONFIG_INVALID" when the bucket is missing or the credentials are refused or absent.
   */
  static async open(options: S3ObjectStoreOptions): Promise<S3ObjectStore> {
    const sdk = await import("@aws-sdk/client-s3");
    const { client, compiled } = compileS3ObjectStoreOptions(sdk, options);
    try {
      await client.send(new sdk.HeadBucketCommand({ Bucket: compiled.bucket }));
      const conditionalPut = compiled.conditionalPut ?? (await probeConditionalPut(sdk, client, compiled.bucket));
      return new S3ObjectStore(sdk, client, compiled, conditionalPut);
    } catch (error) {
      client.destroy();
      throw openFailure(compiled, error);
    }
  }

  async size(key: string): Promise<number> {
    checkObjectKey(key);
    try {
      const head = await this.#client.send(new this.#sdk.HeadObjectCommand({ Bucket: this.#options.bucket, Key: key }));
      return head.ContentLength ?? 0;
    } catch (error) {
      throw this.#failure("HeadObject", key, error);
    }
  }

  async read(key: string, offset: number, target: Buffer): Promise<void> {
    checkObjectKey(key);
    const end = offset + target.length;
    if (target.length === 0) {
      const size = await this.size(key);
      if (offset > size) throw missingRange(key, offset, size);
      return;
    }
    let response: GetObjectCommandOutput;
    try {
      response = await this.#client.send(
        new this.#sdk.GetObjectCommand({ Bucket: this.#options.bucket, Key: key, Range: `bytes=${offset}-${end - 1}` }),
      );
    } catch (error) {
      if (statusOf(error) === 416) throw missingRange(key, end, await this.size(key));
      throw this.#failure("GetObject", key, error);
    }
    let bytes = await this.#body(key, response);
    // A server that ignores Range sends the whole object.
    if (response.ContentRange === undefined) bytes = bytes.subarray(offset, end);
    if (bytes.length !== target.length) throw missingRange(key, end, offset + bytes.length);
    target.set(bytes);
  }

  async write(key: string, offset: number, bytes: Uint8Array): Promise<void> {
    const existing = (await this.get(key)) ?? Buffer.alloc(0);
    const object =
      existing.length >= offset + bytes.length
        ? existing
        : Buffer.concat([existing, Buffer.alloc(offset + bytes.length - existing.length)]);
    object.set(bytes, offset);
    try {
      await this.#client.send(
        new this.#sdk.PutObjectCommand({
          Bucket: this.#options.bucket,
          Key: key,
          Body: object,
          ContentLength: object.byteLength,
        }),
      );
    } catch (error) {
      throw this.#failure("PutObject", key, error);
    }
  }

  async delete(key: string): Promise<void> {
    checkObjectKey(key);
    try {
      await this.#client.send(new this.#sdk.DeleteObjectCommand({ Bucket: this.#options.bucket, Key: key }));
    } catch (error) {
      throw this.#failure("DeleteObject", key, error);
    }
  }

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    checkObjectKey(key);
    if (await this.#exists(key)) return false;
    const ifNoneMatch = this.atomicPutIfAbsent ? "*" : undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#client.send(
          new this.#sdk.PutObjectCommand({
            Bucket: this.#options.bucket,
            Key: key,
            Body: bytes,
            ContentLength: bytes.byteLength,
            IfNoneMatch: ifNoneMatch,
          }),
        );
        return true;
      } catch (error) {
        const status = statusOf(error);
        if (status === 412) return false;
        // S3 answers 409 while another conditional write of the key is in flight; a retry settles it.
        if (status === 409 && attempt < 3) continue;
        throw this.#failure("PutObject", key, error);
      }
    }
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    checkObjectKey(key);
    try {
      await this.#client.send(
        new this.#sdk.PutObjectCommand({ Bucket: this.#options.bucket, Key: key, Body: bytes, ContentLength: bytes.byteLength }),
      );
    } catch (error) {
      throw this.#failure("PutObject", key, error);
    }
  }

  async get(key: string): Promise<Buffer | undefined> {
    checkObjectKey(key);
    let response: GetObjectCommandOutput;
    try {
      response = await this.#client.send(new this.#sdk.GetObjectCommand({ Bucket: this.#options.bucket, Key: key }));
    } catch (error) {
      if (isMissingKey(error)) return undefined;
      throw this.#failure("GetObject", key, error);
    }
    return this.#body(key, response);
  }

  async *list(prefix: string): AsyncGenerator<ObjectEntry> {
    let continuationToken: string | undefined;
    do {
      const page = await this.#client
        .send(
          new this.#sdk.ListObjectsV2Command({
            Bucket: this.#options.bucket,
            Prefix: prefix,
            MaxKeys: this.#options.listPageSize,
            ContinuationToken: continuationToken,
          }),
        )
        .catch((error: unknown) => {
          throw this.#failure("ListObjectsV2", `${prefix}*`, error);
        });
      for (const object of page.Contents ?? []) {
        if (object.Key !== undefined) yield { key: object.Key, bytes: object.Size ?? 0 };
      }
      continuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (continuationToken);
  }

  async close(): Promise<void> {
    this.#client.destroy();
  }

  async #exists(key: string): Promise<boolean> {
    try {
      await this.#client.send(new this.#sdk.HeadObjectCommand({ Bucket: this.#options.bucket, Key: key }));
      return true;
    } catch (error) {
      if (isMissingKey(error)) return false;
      throw this.#failure("HeadObject", key, error);
    }
  }

  async #body(key: string, response: GetObjectCommandOutput): Promise<Buffer> {
    try {
      const bytes = (await response.Body?.transformToByteArray()) ?? new Uint8Array(0);
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } catch (error) {
      throw this.#failure("GetObject", key, error);
    }
  }

  #failure(operation: string, key: string, error: unknown): ArmatureError {
    if (isMissingKey(error)) return objectMissing(this.name, key, error);
    const status = statusOf(error);
    const retryable = status === undefined || status >= 500 || status === 429 || status === 408;
    const what = status === undefined ? errorMessage(error) : `HTTP ${status} ${errorName(error)}`;
    const hint = status === 403 ? "; check the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)" : "";
    return new ArmatureError("TRANSFER_FAILED", `${operation} of ${key} in the ${this.name} failed: ${what}${hint}`, {
      cause: error,
      retryable,
    });
  }
}

/** True when the server refused the second of two `If-None-Match: *` puts of one new key. */
async function probeConditionalPut(sdk: S3Sdk, client: S3Client, bucket: string): Promise<boolean> {
  const key = `.armature-probe/${randomUUID()}`;
  const put = () => client.send(new sdk.PutObjectCommand({ Bucket: bucket, Key: key, Body: "", IfNoneMatch: "*" }));
  try {
    await put();
  } catch (error) {
    // 501 Not Implemented: the endpoint refuses the If-None-Match header outright.
    if (statusOf(error) === 501) return false;
    throw error;
  }
  try {
    await put();
    return false;
  } catch (error) {
    if (statusOf(error) === 412) return true;
    throw error;
  } finally {
    await client.send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: key })).catch(() => undefined);
  }
}

function openFailure(options: CompiledS3Options, error: unknown): ArmatureError {
  const status = statusOf(error);
  const where = `the ${options.display}`;
  if (errorName(error) === "CredentialsProviderError") {
    return new ArmatureError(
      "CONFIG_INVALID",
      `no credentials for ${where}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)`,
      { cause: error },
    );
  }
  if (status === undefined || status >= 500) {
    return new ArmatureError(
      "TRANSFER_FAILED",
      `cannot reach ${where} (${status === undefined ? errorMessage(error) : `HTTP ${status}`}): check the endpoint in the object store URL and that the server is up`,
      { cause: error, retryable: true },
    );
  }
  const fix =
    status === 404
      ? "create the bucket, or name one that exists"
      : status === 403
        ? "check the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) and the bucket's policy"
        : "check the object store URL (endpoint, region, forcePathStyle)";
  return new ArmatureError("CONFIG_INVALID", `${where} refused access (HTTP ${status} ${errorName(error)}): ${fix}`, {
    cause: error,
  });
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

function isMissingKey(error: unknown): boolean {
  return statusOf(error) === 404 && errorName(error) !== "NoSuchBucket";
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : "error";
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}
