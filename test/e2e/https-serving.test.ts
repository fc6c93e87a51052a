import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import { copyFile, readFile, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { connect } from "node:tls";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startServe } from "../helpers/armature-process.js";
import { makeThrowawayCa, type ThrowawayCa } from "../helpers/throwaway-ca.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = join(ROOT, "bin/armature.js");
const MODEL = "armature-mocker";
const MOCKER = ["--engine", "mocker", "--speedup-ratio", "100"];

let ca: ThrowawayCa;
before(async () => {
  ca = await makeThrowawayCa();
});
after(() => ca.remove());

/** The official openai client in a child process that trusts the CA the way a deployment would: `NODE_EXTRA_CA_CERTS`. */
const CHAT_CLIENT = `
import OpenAI from "openai";
const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "unused", maxRetries: 0 });
const completion = await client.chat.completions.create({
  model: ${JSON.stringify(MODEL)}, messages: [{ role: "user", content: "Hi" }], max_tokens: 4,
});
process.stdout.write(JSON.stringify(completion));
`;

async function chatWithOpenAiClient(baseUrl: string, trustedCaFile: string): Promise<{ object: string; model: string }> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", CHAT_CLIENT], {
    cwd: ROOT,
    env: { ...process.env, BASE_URL: baseUrl, NODE_EXTRA_CA_CERTS: trustedCaFile },
    timeout: 30_000,
  });
  return JSON.parse(stdout) as { object: string; model: string };
}

interface ClientTls {
  readonly caFile: string;
  readonly certFile?: string;
  readonly keyFile?: string;
}

/** One HTTPS request on a fresh connection: status and body. */
async function httpsRequest(url: string, tls: ClientTls, body?: unknown): Promise<{ status: number; body: string }> {
  const [ca, cert, key] = await Promise.all([
    readFile(tls.caFile),
    tls.certFile ? readFile(tls.certFile) : undefined,
    tls.keyFile ? readFile(tls.keyFile) : undefined,
  ]);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: body === undefined ? "GET" : "POST",
        headers: body === undefined ? {} : { "content-type": "application/json" },
        ca,
        cert,
        key,
        agent: false,
        timeout: 10_000,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** SHA-256 fingerprint of the certificate the server presents to a new connection. */
async function servedFingerprint(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port), ca: await readFile(ca.caFile) });
  try {
    await once(socket, "secureConnect");
    return socket.getPeerX509Certificate()?.fingerprint256 ?? "";
  } finally {
    socket.destroy();
  }
}

async function fingerprintOf(certFile: string): Promise<string> {
  return new X509Certificate(await readFile(certFile)).fingerprint256;
}

async function until(what: string, check: () => Promise<boolean> | boolean, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs `armature serve ARGS` to its exit: exit code and what it printed on stderr. */
async function serveToExit(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, "serve", "--port", "0", ...args, "--log-level", "warn"], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const [code] = (await once(child, "exit")) as [number | null];
  clearTimeout(timer);
  return { code, stderr };
}

test("with --tls-cert and --tls-key, serve answers the openai client over HTTPS and nothing over plain HTTP", async () => {
  const server = await startServe([...MOCKER, "--tls-cert", ca.serverCertFile, "--tls-key", ca.serverKeyFile]);
  try {
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/, "the banner names the https URL");
    const completion = await chatWithOpenAiClient(`${server.url}/v1`, ca.caFile);
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.model, MODEL);
    assert.equal(await servedFingerprint(server.url), await fingerprintOf(ca.serverCertFile));
    // A client that trusts another CA refuses the server.
    await assert.rejects(httpsRequest(`${server.url}/health`, { caFile: ca.otherCaFile }), {
      code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    });
    // Plain HTTP to the same port gets no HTTP answer: the connection is closed.
    const plain = server.url.replace("https:", "http:");
    await assert.rejects(fetch(`${plain}/health`, { signal: AbortSignal.timeout(10_000) }), (error: Error) => {
      assert.equal(error.name, "TypeError", `fetch failed on the connection, not by the timeout: ${error}`);
      return true;
    });
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

// The files' other refusals (unreadable, no certificate, no key, a CA file without one) are
// readHttpsCredentials's, tested in src/cli/https-credentials.test.ts; these two show how serve stops.
test("a missing or mismatched TLS file stops serve at start with one line naming the flag", async () => {
  const cases: { args: string[]; env?: NodeJS.ProcessEnv; line: RegExp }[] = [
    {
      args: ["--tls-cert", ca.serverCertFile, "--tls-key", ca.clientKeyFile],
      line: /^armature: --tls-key \(ARMATURE_TLS_KEY\) \S+client\.key is not the private key of the certificate in --tls-cert /,
    },
    { args: ["--tls-cert", ca.serverCertFile], line: /^armature: --tls-key \(ARMATURE_TLS_KEY\) is missing/ },
  ];
  for (const { args, env, line } of cases) {
    const result = await serveToExit([...MOCKER, ...args], env);
    assert.equal(result.code, 1, `exit code for ${args.join(" ")}`);
    const lines = result.stderr.trim().split("\n");
    assert.equal(lines.length, 1, `one line, got:\n${result.stderr}`);
    assert.match(lines[0] ?? "", line);
  }
});

test("with --tls-ca, a client without a certificate is refused in the handshake and one with a certificate is served", async () => {
  const tls = ["--tls-cert", ca.serverCertFile, "--tls-key", ca.serverKeyFile, "--tls-ca", ca.caFile];
  const server = await startServe([...MOCKER, ...tls]);
  try {
    await assert.rejects(httpsRequest(`${server.url}/health`, { caFile: ca.caFile }), (error: NodeJS.ErrnoException) => {
      // TLS 1.3: the server's alert arrives after the client's side of the handshake; TLS 1.2: a reset.
      assert.match(String(error.code), /CERTIFICATE_REQUIRED|ECONNRESET|HANDSHAKE_FAILURE/, String(error));
      return true;
    });
    const client = { caFile: ca.caFile, certFile: ca.clientCertFile, keyFile: ca.clientKeyFile };
    const chat = await httpsRequest(`${server.url}/v1/chat/completions`, client, {
      model: MODEL,
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 3,
    });
    assert.equal(chat.status, 200, chat.body);
    assert.equal((JSON.parse(chat.body) as { object: string }).object, "chat.completion");
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test("SIGHUP serves a rotated certificate to new connections; a bad one is refused and the old one stays", async () => {
  const certFile = join(ca.dir, "served.pem");
  const keyFile = join(ca.dir, "served.key");
  await copyFile(ca.serverCertFile, certFile);
  await copyFile(ca.serverKeyFile, keyFile);
  const server = await startServe([...MOCKER, "--tls-cert", certFile, "--tls-key", keyFile]);
  try {
    const first = await fingerprintOf(ca.serverCertFile);
    assert.equal(await servedFingerprint(server.url), first);

    const rotated = await ca.issueServerCertificate("server-rotated");
    const second = await fingerprintOf(rotated.certFile);
    assert.notEqual(second, first);
    await copyFile(rotated.certFile, certFile);
    await copyFile(rotated.keyFile, keyFile);
    server.child.kill("SIGHUP");
    await until("the rotated certificate served", async () => (await servedFingerprint(server.url)) === second);

    // The old certificate with the new key: the reload is refused, the rotated certificate stays.
    await copyFile(ca.serverCertFile, certFile);
    server.child.kill("SIGHUP");
    await until("the refusal logged", () => server.output().includes("TLS certificate not reloaded"));
    const refusal = server
      .output()
      .split("\n")
      .find((line) => line.includes("TLS certificate not reloaded"));
    assert.match(refusal ?? "", /--tls-key \(ARMATURE_TLS_KEY\) \S+served\.key is not the private key/, "the log says why");
    assert.equal(await servedFingerprint(server.url), second);
    const health = await httpsRequest(`${server.url}/health`, { caFile: ca.caFile });
    assert.equal(health.status, 200);
    await writeFile(certFile, "not a certificate\n");
    server.child.kill("SIGHUP");
    await until("the second refusal logged", () => server.output().split("TLS certificate not reloaded").length === 3);
    assert.equal(await servedFingerprint(server.url), second);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});
