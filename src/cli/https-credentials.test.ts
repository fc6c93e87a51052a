import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { makeThrowawayCa, type ThrowawayCa } from "../../test/helpers/throwaway-ca.js";
import { readHttpsCredentials } from "./https-credentials.js";

let ca: ThrowawayCa;
before(async () => {
  ca = await makeThrowawayCa();
});
after(() => ca.remove());

test("the files' PEM text is what the frontend gets, the client CA only with --tls-ca", async () => {
  const plain = readHttpsCredentials({ certFile: ca.serverCertFile, keyFile: ca.serverKeyFile, clientCaFile: undefined });
  assert.equal(plain.cert, await readFile(ca.serverCertFile, "utf8"));
  assert.equal(plain.key, await readFile(ca.serverKeyFile, "utf8"));
  assert.equal(plain.clientCa, undefined);
  // A bundle of two CAs: clients of either are accepted, so both must parse.
  const bundle = join(ca.dir, "bundle.pem");
  await writeFile(bundle, (await readFile(ca.caFile, "utf8")) + (await readFile(ca.otherCaFile, "utf8")));
  const mutual = readHttpsCredentials({ certFile: ca.serverCertFile, keyFile: ca.serverKeyFile, clientCaFile: bundle });
  assert.equal(mutual.clientCa, await readFile(bundle, "utf8"));
});

test("an encrypted key is refused naming --tls-key, since the server has no passphrase to open it", async () => {
  const encrypted = join(ca.dir, "encrypted.key");
  await promisify(execFile)("openssl", [
    "pkey",
    "-in",
    ca.serverKeyFile,
    "-aes256",
    "-passout",
    "pass:secret",
    "-out",
    encrypted,
  ]);
  assert.throws(
    () => readHttpsCredentials({ certFile: ca.serverCertFile, keyFile: encrypted, clientCaFile: undefined }),
    (error: Error & { code?: string }) => {
      assert.equal(error.code, "CONFIG_INVALID");
      assert.match(error.message, /^--tls-key \(ARMATURE_TLS_KEY\) \S+encrypted\.key is encrypted; decrypt it/);
      return true;
    },
  );
});

test("a CA bundle with one broken certificate is refused naming --tls-ca and which certificate", async () => {
  const broken = join(ca.dir, "broken-bundle.pem");
  const good = await readFile(ca.caFile, "utf8");
  await writeFile(broken, `${good}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n`);
  assert.throws(
    () => readHttpsCredentials({ certFile: ca.serverCertFile, keyFile: ca.serverKeyFile, clientCaFile: broken }),
    /^ArmatureError: --tls-ca \(ARMATURE_TLS_CA\) \S+broken-bundle\.pem: certificate 2 does not parse/,
  );
});

test("an unreadable file, a certificate file without a certificate, a key file without a key, each refused naming its flag", () => {
  const cases: { files: Parameters<typeof readHttpsCredentials>[0]; message: RegExp }[] = [
    {
      files: { certFile: join(ca.dir, "absent.pem"), keyFile: ca.serverKeyFile, clientCaFile: undefined },
      message: /^--tls-cert \(ARMATURE_TLS_CERT\) \S+absent\.pem cannot be read \(ENOENT\)$/,
    },
    {
      files: { certFile: ca.serverKeyFile, keyFile: ca.serverKeyFile, clientCaFile: undefined },
      message: /^--tls-cert \(ARMATURE_TLS_CERT\) \S+server\.key holds no PEM certificate/,
    },
    {
      files: { certFile: ca.serverCertFile, keyFile: ca.serverCertFile, clientCaFile: undefined },
      message: /^--tls-key \(ARMATURE_TLS_KEY\) \S+server\.pem holds no PEM private key/,
    },
    {
      files: { certFile: ca.serverCertFile, keyFile: ca.serverKeyFile, clientCaFile: ca.serverKeyFile },
      message: /^--tls-ca \(ARMATURE_TLS_CA\) \S+server\.key holds no PEM certificate/,
    },
  ];
  for (const { files, message } of cases) {
    assert.throws(() => readHttpsCredentials(files), { code: "CONFIG_INVALID", message });
  }
});
