// Module hooks that let `armature` run its TypeScript sources with no build step: a relative
// `./x.js` import finds `./x.ts`, and each `.ts` file is stripped of its types by esbuild (the same
// transform tsx runs) with a source map inline, cached on disk by content. Unlike tsx it does not ask
// esbuild to keep names: nothing here is minified, so functions keep their names anyway, and the
// keep-names transform wraps every closure bound to a name in a `defineProperty` call at run time
// (docs/benchmarks.md, "Frontend capacity": 11–20% of a short request's CPU).
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { transform, version } from "esbuild";

const target = `node${process.versions.node}`;
const cacheDir = join(tmpdir(), `armature-ts-${userInfo().uid}`);

export async function resolve(specifier, context, nextResolve) {
  const relative = specifier.startsWith("./") || specifier.startsWith("../");
  if (relative && specifier.endsWith(".js") && context.parentURL?.startsWith("file:")) {
    const typescript = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
    if (existsSync(typescript)) return { url: typescript.href, format: "module", shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith("file:") || !url.endsWith(".ts")) return nextLoad(url, context);
  const path = fileURLToPath(url);
  const source = await readFile(path, "utf8");
  const key = createHash("sha256").update(`${version}\0${target}\0${path}\0`).update(source).digest("hex");
  const cached = join(cacheDir, `${key}.js`);
  const hit = await readFile(cached, "utf8").catch(() => undefined);
  if (hit !== undefined) return { format: "module", source: hit, shortCircuit: true };
  const { code } = await transform(source, { loader: "ts", format: "esm", target, sourcemap: "inline", sourcefile: path });
  await storeQuietly(cached, code);
  return { format: "module", source: code, shortCircuit: true };
}

/** A cache that cannot be written only costs the next start the transform again. */
async function storeQuietly(file, code) {
  try {
    await mkdir(cacheDir, { recursive: true });
    const partial = `${file}.${process.pid}.tmp`;
    await writeFile(partial, code);
    await rename(partial, file);
  } catch {
    // Not cached: nothing else depends on it.
  }
}
