#!/usr/bin/env node
// The node_modules the agent image carries for one target architecture: koffi (the one module left
// outside the agent's bundle: a native addon) and its prebuilt binary for linux/<arch> with glibc,
// nothing else (no musl binary, no sources). The Dockerfile's build stage runs it once per platform
// it builds (`docker buildx build --platform linux/amd64,linux/arm64`):
//
//   node scripts/agent-modules.js --arch "$TARGETARCH" --out .build/agent-modules
//
// and the runtime stage copies .build/agent-modules/node_modules/ whatever the architecture. The
// build stage runs on the builder's own platform (the bundle is plain JavaScript), so `npm ci` there
// installed koffi's binary for the builder's architecture only; another one is fetched with
// `npm pack` at the version package-lock.json locks, and refused unless its sha512 is the lockfile's
// `integrity` for it. Docker's TARGETARCH names (amd64, arm64) are Node's (x64, arm64) here.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

/** Docker's TARGETARCH → the architecture in koffi's package names (Node's process.arch). */
export const ARCHES = { amd64: 'x64', arm64: 'arm64' };

/** koffi's own files the agent loads: its ESM entry and loader (the rest is sources and other platforms). */
const KOFFI_FILES = ['package.json', 'index.js', 'src/koffi/index.js', 'src/koffi/src/static.js'];

/** The lockfile's entry for a package: its version and integrity (what npm ci would have checked). */
export function locked(root, name) {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const entry = lock.packages?.[`node_modules/${name}`];
  if (!entry?.version || !entry.integrity) throw new Error(`${name}: not in package-lock.json with an integrity`);
  return { version: entry.version, integrity: entry.integrity };
}

/** `sha512-<base64>` of a file, as npm writes integrity. */
export function integrityOf(file) {
  return `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
}

/** Fetches `name@version`'s tarball with npm (no install, so npm's os/cpu checks do not apply). */
function npmPack(name, version, into) {
  const out = execFileSync('npm', ['pack', `${name}@${version}`, '--pack-destination', into, '--json', '--silent'], {
    encoding: 'utf8',
  });
  return join(into, JSON.parse(out)[0].filename);
}

/**
 * Lays out `<out>/node_modules/` for `arch` (Docker's name) from the checkout at `root`. The
 * binary's package comes from root's node_modules when npm ci installed it at the locked version,
 * otherwise from `fetch(name, version, dir)` (a tarball path; default `npm pack`), checked against
 * the lockfile's integrity before anything is unpacked. `lock(name)` is the lockfile's entry (tests).
 */
export function layout({ root, out, arch, fetch = npmPack, lock = (name) => locked(root, name) }) {
  const nodeArch = ARCHES[arch];
  if (!nodeArch) throw new Error(`--arch ${arch}: the agent image is built for ${Object.keys(ARCHES).join(', ')}`);
  const name = `@koromix/koffi-linux-${nodeArch}`;
  const koffi = lock('koffi');
  const binary = lock(name);
  const modules = join(out, 'node_modules');
  rmSync(out, { recursive: true, force: true });
  for (const f of KOFFI_FILES) {
    mkdirSync(join(modules, 'koffi', f, '..'), { recursive: true });
    cpSync(join(root, 'node_modules/koffi', f), join(modules, 'koffi', f));
  }
  const installed = join(root, 'node_modules', name);
  let from = installed;
  let scratch;
  const version = existsSync(join(installed, 'package.json'))
    ? JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).version
    : undefined;
  if (version !== binary.version) {
    scratch = mkdtempSync(join(tmpdir(), 'agent-modules-'));
    const tarball = fetch(name, binary.version, scratch);
    const got = integrityOf(tarball);
    if (got !== binary.integrity)
      throw new Error(`${name}@${binary.version}: the tarball's ${got} is not package-lock.json's ${binary.integrity}`);
    execFileSync('tar', ['-xzf', tarball, '-C', scratch]);
    from = join(scratch, 'package');
  }
  // The glibc binary only: the image is Debian (bookworm); musl_<arch> stays behind.
  for (const f of ['package.json', 'index.js', `linux_${nodeArch}`])
    cpSync(join(from, f), join(modules, name, f), { recursive: true });
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  return { koffi: koffi.version, binary: name, version: binary.version, fetched: scratch !== undefined };
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const { values } = parseArgs({ options: { arch: { type: 'string' }, out: { type: 'string' } }, strict: true });
  try {
    if (!values.arch || !values.out) throw new Error('usage: node scripts/agent-modules.js --arch ARCH --out DIR');
    const root = new URL('..', import.meta.url).pathname;
    const r = layout({ root, out: values.out, arch: values.arch });
    process.stdout.write(
      `${values.out}/node_modules: koffi ${r.koffi} with ${r.binary}@${r.version}` +
        `${r.fetched ? ' (fetched, integrity checked)' : ''}\n`,
    );
  } catch (err) {
    process.stderr.write(`agent-modules: ${err.message}\n`);
    process.exit(2);
  }
}
