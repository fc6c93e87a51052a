import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A CA made for one test, a server certificate for 127.0.0.1 and a client certificate, as PEM files. */
export interface ThrowawayCa {
  readonly dir: string;
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  /** A second CA that signed none of these: a client trusting it must refuse the server. */
  readonly otherCaFile: string;
  /** Another server certificate for 127.0.0.1 from the same CA (a rotation), as `NAME.pem` and `NAME.key`. */
  issueServerCertificate(name: string): Promise<{ certFile: string; keyFile: string }>;
  remove(): Promise<void>;
}

/** Makes the certificates with `openssl` (installed with the system) in a temporary folder. */
export async function makeThrowawayCa(): Promise<ThrowawayCa> {
  const dir = await mkdtemp(join(tmpdir(), "armature-ca-"));
  const at = (name: string): string => join(dir, name);
  const openssl = (...args: string[]) => run("openssl", args, { cwd: dir });
  for (const ca of ["ca", "other-ca"]) {
    await openssl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/CN=armature test ${ca}`,
      "-keyout",
      at(`${ca}.key`),
      "-out",
      at(`${ca}.pem`),
    );
  }
  const leaf = async (name: string, extensions: string): Promise<void> => {
    await writeFile(at(`${name}.ext`), extensions);
    await openssl(
      "req",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      `/CN=${name}`,
      "-keyout",
      at(`${name}.key`),
      "-out",
      at(`${name}.csr`),
    );
    await openssl(
      "x509",
      "-req",
      "-in",
      at(`${name}.csr`),
      "-CA",
      at("ca.pem"),
      "-CAkey",
      at("ca.key"),
      "-CAcreateserial",
      "-days",
      "1",
      "-extfile",
      at(`${name}.ext`),
      "-out",
      at(`${name}.pem`),
    );
  };
  const serverExtensions = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n";
  await leaf("server", serverExtensions);
  await leaf("client", "extendedKeyUsage=clientAuth\n");
  return {
    dir,
    caFile: at("ca.pem"),
    serverCertFile: at("server.pem"),
    serverKeyFile: at("server.key"),
    clientCertFile: at("client.pem"),
    clientKeyFile: at("client.key"),
    otherCaFile: at("other-ca.pem"),
    async issueServerCertificate(name) {
      await leaf(name, serverExtensions);
      return { certFile: at(`${name}.pem`), keyFile: at(`${name}.key`) };
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
