import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Frontend, TlsOptions } from "../frontend/index.js";
import type { Logger } from "../observability/index.js";
import { ArmatureError, isArmatureError } from "../protocol/index.js";
import { type HttpsFiles, serveSettings } from "./serve-options.js";
import { onHangup } from "./signals.js";

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Reads and checks `--tls-cert`, `--tls-key` and `--tls-ca`. Throws `CONFIG_INVALID` naming the flag
 * at fault: a file that cannot be read, one that holds no PEM certificate or key, a key that does
 * not belong to the certificate (named as `--tls-key`), or an encrypted key.
 */
export function readHttpsCredentials(files: HttpsFiles): TlsOptions {
  const cert = readPem("tls-cert", files.certFile);
  const key = readPem("tls-key", files.keyFile);
  const certificate = parseCertificates("tls-cert", files.certFile, cert)[0] as X509Certificate;
  const privateKey = parseKey(files.keyFile, key);
  if (!certificate.checkPrivateKey(privateKey)) {
    throw flagError(
      "tls-key",
      `${files.keyFile} is not the private key of the certificate in --tls-cert ${files.certFile}; give the key it was issued for`,
    );
  }
  if (files.clientCaFile === undefined) return { cert, key };
  const clientCa = readPem("tls-ca", files.clientCaFile);
  parseCertificates("tls-ca", files.clientCaFile, clientCa);
  return { cert, key, clientCa };
}

/**
 * Rereads the files on every SIGHUP and gives the frontend the new credentials, so certificates are
 * rotated without a restart. Files that fail the checks of {@link readHttpsCredentials} keep the
 * credentials in force, and the log says why. Returns the function that stops listening.
 */
export function reloadHttpsOnHangup(files: HttpsFiles, frontend: Frontend, logger: Logger): () => void {
  const log = logger.child({ component: "tls" });
  return onHangup(() => {
    try {
      const tls = readHttpsCredentials(files);
      frontend.replaceTlsCredentials(tls);
      const { fingerprint256, validTo } = new X509Certificate(tls.cert);
      log.info({ certFile: files.certFile, fingerprint256, validTo }, "TLS certificate reloaded; new connections get it");
    } catch (error) {
      const reason = isArmatureError(error) ? error.message : String(error);
      log.error({ certFile: files.certFile, reason }, "TLS certificate not reloaded; the previous one stays in force");
    }
  });
}

function readPem(flag: string, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? (cause as Error).message;
    throw flagError(flag, `${path} cannot be read (${code})`, cause);
  }
}

function parseCertificates(flag: string, path: string, pem: string): X509Certificate[] {
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw flagError(flag, `${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((block, index) => {
    try {
      return new X509Certificate(block);
    } catch (cause) {
      throw flagError(flag, `${path}: certificate ${index + 1} does not parse (${(cause as Error).message})`, cause);
    }
  });
}

function parseKey(path: string, pem: string): KeyObject {
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(pem)) {
    throw flagError("tls-key", `${path} is encrypted; decrypt it (openssl pkey -in KEY -out PLAIN) and keep it private`);
  }
  try {
    return createPrivateKey(pem);
  } catch (cause) {
    throw flagError("tls-key", `${path} holds no PEM private key (${(cause as Error).message})`, cause);
  }
}

function flagError(flag: string, problem: string, cause?: unknown): ArmatureError {
  return new ArmatureError("CONFIG_INVALID", `--${flag} (${serveSettings[flag]?.env}) ${problem}`, { cause });
}
