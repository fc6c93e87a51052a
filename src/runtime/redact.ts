/**
 * Secrets out of text that reaches a log line or an error message: the user and password of a URL
 * (`nats://user:pass@host` → `nats://***@host`), and any password or token given on its own.
 */

const userInfo = /(\/\/)[^/@\s]*@/g;

/** The URL with its user information replaced by `***`; text that is not a URL is scrubbed the same way. */
export function redactUrl(url: string): string {
  return url.replace(userInfo, "$1***@");
}

/** `text` with every URL user part and every one of `secrets` (passwords, tokens) replaced by `***`. */
export function redactSecrets(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = redactUrl(text);
  for (const secret of secrets) {
    if (secret) out = out.split(secret).join("***");
  }
  return out;
}
