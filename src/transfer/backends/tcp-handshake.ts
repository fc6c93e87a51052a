import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * The handshake that opens every transfer connection. The listener speaks first:
 *
 *   listener → `hello {nonce?}`          (a nonce when it has a deployment secret)
 *   dialer   → `auth {nonce, proof}`     proof = HMAC-SHA256(secret, "client" ‖ listener nonce ‖ dialer nonce)
 *   listener → `welcome {proof}`         proof = HMAC-SHA256(secret, "server" ‖ listener nonce ‖ dialer nonce)
 *
 * Both sides prove they hold the secret without sending it, and fresh nonces on both sides keep a
 * recorded exchange from being replayed. A listener without a secret sends a bare `hello` and serves
 * at once; a dialer that holds a secret refuses such a listener, so a deployment with a secret never
 * sends KV bytes to, or takes them from, a process outside it. The secret authenticates; it does not
 * encrypt: across untrusted networks run the transfer port inside a private network or a VPN.
 */

/** A connection that has not authenticated within this long is closed. */
export const HANDSHAKE_TIMEOUT_MS = 5_000;

/** Shortest secret accepted: 16 bytes of randomness, as 32 hex digits, is the floor. */
export const MIN_SECRET_LENGTH = 32;

/** How to make a secret, for messages. */
export const SECRET_HINT =
  "--transfer-secret (ARMATURE_TRANSFER_SECRET), the same on every worker of the deployment (e.g. `openssl rand -hex 32`)";

export function newNonce(): string {
  return randomBytes(32).toString("hex");
}

export function handshakeProof(secret: string, side: "client" | "server", listenerNonce: string, dialerNonce: string): string {
  return createHmac("sha256", secret).update(`armature-transfer/1\n${side}\n${listenerNonce}\n${dialerNonce}`).digest("hex");
}

/** Constant-time comparison of a computed proof with one a peer sent (any string). */
export function proofMatches(expected: string, given: string): boolean {
  const want = Buffer.from(expected, "hex");
  const got = Buffer.from(given, "hex");
  return want.length === got.length && timingSafeEqual(want, got);
}

/** Whether an address stays on this host (no handshake secret is required to bind it). */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
  return bare === "localhost" || bare === "::1" || /^127(\.\d{1,3}){3}$/.test(bare) || bare === "::ffff:127.0.0.1";
}
