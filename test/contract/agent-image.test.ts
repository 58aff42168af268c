import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ARCHES, integrityOf, layout, locked } from '../../scripts/agent-modules.js';
import { currentTag, indexDigest, pinned, PLATFORMS } from '../../scripts/pin-node-image.js';
import { parseDockerfile } from '../dockerfile.ts';

// The node agent's image and the DaemonSet that runs it, checked without a Docker engine. The
// runtime stage is also assembled from these COPY lines and started: test/contract/build.test.ts.
const root = new URL('../../', import.meta.url).pathname;
const read = (p: string) => readFileSync(join(root, p), 'utf8');
const { args, stages } = parseDockerfile(read('Dockerfile'));
const [build, runtime] = [stages.find((s) => s.name === 'build')!, stages.at(-1)!];

type Container = { name: string; command?: string[]; env?: { name: string }[] };
const daemonSet = parseAllDocuments(read('infra/k8s/node-agent.yaml'))
  .map((d) => d.toJS() as { kind: string; spec?: { template: { spec: { containers: Container[] } } } })
  .find((d) => d.kind === 'DaemonSet')!;
const agent = daemonSet.spec!.template.spec.containers.find((c) => c.name === 'agent')!;

/** Every repository file a module reaches through relative imports (static, dynamic, tsImport). */
function reach(entries: string[]): Set<string> {
  const seen = new Set<string>();
  const todo = [...entries];
  while (todo.length) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    // `import type` is erased by esbuild without being resolved: not a file the build reads.
    for (const m of read(file).matchAll(
      /(?:\b(?:import|export)(\s+type\b)?[^;'"]*?\bfrom\s+|\bimport\s*\(\s*|\btsImport\(\s*)'(\.\.?\/[^']+)'/g,
    )) {
      if (m[1]) continue;
      const target = relative(root, normalize(join(root, dirname(file), m[2]!)));
      if (existsSync(join(root, target))) todo.push(target);
    }
  }
  return seen;
}

describe('Dockerfile (the node agent image)', () => {
  it('builds in one stage and runs from a slim Node in the last, which copies only from the first', () => {
    expect(args).toContain('NODE_IMAGE');
    expect(stages.map((s) => s.name)).toEqual(['build', 'runtime']);
    for (const s of stages) expect(s.image).toBe('${NODE_IMAGE}');
    // Node 22, pinned by a digest (its multi-platform index's: scripts/pin-node-image.js).
    expect(read('Dockerfile')).toMatch(/^ARG NODE_IMAGE=node:22-[a-z]+-slim@sha256:[0-9a-f]{64}$/m);
    // The bundle is built once on the builder's platform; the runtime is the target platform's.
    expect(build.platform).toBe('$BUILDPLATFORM');
    expect(runtime.platform).toBeUndefined();
    for (const c of runtime.copies) expect(c.from, `Dockerfile:${c.line}`).toBe('build');
    expect(build.copies.every((c) => c.from === undefined)).toBe(true);
    expect(read('Dockerfile')).toMatch(/^RUN npm ci\b/m);
    expect(read('Dockerfile')).toMatch(/^RUN npm run build$/m);
  });

  it('copies into the build stage only files that exist and that .dockerignore lets through', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#'))
      .map((l) => l.trim());
    for (const c of build.copies) {
      for (const src of c.sources) {
        expect(existsSync(join(root, src)), `Dockerfile:${c.line}: ${src}`).toBe(true);
        expect(
          ignored.some((i) => src.startsWith(i)),
          `Dockerfile:${c.line}: ${src} is in .dockerignore`,
        ).toBe(false);
      }
    }
  });

  it("gives the build stage every file npm run build reads: the agent's and each function's imports", () => {
    const copied = build.copies.flatMap((c) => c.sources);
    const handlers = Object.values(
      (parseYaml(read('serverless.yml'), { logLevel: 'silent' }) as { functions: Record<string, { handler: string }> })
        .functions,
    ).map((f) => `${f.handler.slice(0, f.handler.lastIndexOf('.'))}.ts`);
    const missing = [...reach(['scripts/build.js', 'node-agent/main.ts', ...handlers])].filter(
      (f) => !copied.some((src) => f === src || (src.endsWith('/') && f.startsWith(src))),
    );
    expect(missing).toEqual([]);
  });

  it("copies into the runtime stage only from the build stage: its bundle and koffi's layout for the target", () => {
    for (const c of runtime.copies) {
      for (const src of c.sources) {
        const inRepo = relative(build.workdir, src);
        expect(src.startsWith(`${build.workdir}/`), `Dockerfile:${c.line}: ${src}`).toBe(true);
        // .build/ is what the build stage writes: `npm run build`'s bundle and agent-modules.js's
        // layout (build.test.ts builds both and runs the agent from them).
        expect(inRepo).toMatch(/^\.build\/(node-agent|agent-modules\/node_modules)(\/|$)/);
      }
    }
  });

  it('runs as a non-root user the file the DaemonSet starts', () => {
    expect(runtime.user).toMatch(/^[1-9]\d*(:\d+)?$/);
    expect(runtime.entrypoint).toEqual(agent.command);
    const target = agent.command!.at(-1)!;
    // A file copied to it, or into the folder that holds it; or the bundle's folder (.build/node-agent:
    // agent.mjs and its chunks, scripts/agent-bundle.js) copied into that folder.
    const bundleFolder = (c: (typeof runtime.copies)[number]) =>
      c.sources.some((s) => relative(build.workdir, s) === '.build/node-agent') && target === `${c.dest}agent.mjs`;
    expect(
      runtime.copies.some(
        (c) =>
          c.dest === target ||
          (c.dest.endsWith('/') &&
            target === c.dest + c.sources.map((s) => s.split('/').at(-1)).find((n) => c.dest + n === target)) ||
          bundleFolder(c),
      ),
    ).toBe(true);
  });
});

describe("the DaemonSet env and the agent's documented variables", () => {
  const section = read('docs/node-agent.md')
    .split(/^## /m)
    .find((s) => s.startsWith('Environment\n'))!;
  const rows = section.split('\n').filter((l) => l.startsWith('| `'));
  const documented = new Map(
    rows.flatMap((r) => {
      const [name, , meaning] = r.split(' | ');
      return [...name!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => [m[1]!, meaning!] as const);
    }),
  );
  // The keys of loadAgentConfig's zod schema (node-agent/config.ts), read from its source.
  const schema = read('node-agent/config.ts').match(/const EnvSchema = z\.object\(\{([\s\S]*?)\n\}\);/)![1]!;
  const parsed = [...schema.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!);

  it('documents every variable loadAgentConfig reads, and nothing else but what Node, the SDK or the runtime reads', () => {
    expect(parsed.length).toBeGreaterThan(20);
    expect(parsed.filter((n) => !documented.has(n))).toEqual([]);
    expect(
      [...documented].filter(([n, meaning]) => !parsed.includes(n) && !/^Read by /.test(meaning)).map(([n]) => n),
    ).toEqual([]);
  });

  it('sets only documented variables, in the DaemonSet and in the actuator patch', () => {
    const patched = (
      parseYaml(read('infra/k8s/actuator/daemonset-patch.yaml')) as {
        spec: { template: { spec: { containers: Container[] } } };
      }
    ).spec.template.spec.containers[0]!;
    const set = [...(agent.env ?? []), ...(patched.env ?? [])].map((e) => e.name);
    expect(set.length).toBeGreaterThan(3);
    expect(set.filter((n) => !documented.has(n))).toEqual([]);
  });
});

/**
 * Both architectures' images, without Docker: the build stage's step that lays out koffi for
 * TARGETARCH (scripts/agent-modules.js) is run here for amd64 from this install, and for arm64 from a
 * tarball standing in for the registry's (this machine has no arm64 koffi and no network).
 */
describe("the image's koffi for each target architecture (scripts/agent-modules.js)", () => {
  const step = () => build.runs.find((r) => r.includes('scripts/agent-modules.js'))!;
  const files = (dir: string) =>
    execFileSync('find', [dir, '-type', 'f'], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map((f) => relative(dir, f))
      .sort();

  it('runs in the build stage for TARGETARCH, after the bundle, into the folder the runtime stage copies', () => {
    expect(step()).toBe('node scripts/agent-modules.js --arch "$TARGETARCH" --out .build/agent-modules');
    expect(build.args).toContain('TARGETARCH');
    expect(build.runs.indexOf(step())).toBeGreaterThan(build.runs.indexOf('npm run build'));
    expect(runtime.copies.flatMap((c) => c.sources)).toContain('/src/.build/agent-modules/node_modules/');
  });

  it('builds for exactly the platforms image:build names, each one koffi ships a binary for', () => {
    const script = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts['image:build']!;
    const platforms = /--platform (\S+)/.exec(script)![1]!.split(',');
    expect(platforms).toEqual(PLATFORMS);
    expect(platforms.map((p) => p.split('/')[1]).sort()).toEqual(Object.keys(ARCHES).sort());
    for (const nodeArch of Object.values(ARCHES))
      expect(locked(root, `@koromix/koffi-linux-${nodeArch}`).integrity).toMatch(/^sha512-/);
  });

  it('amd64: koffi and its linux x64 glibc binary from this install, nothing else', () => {
    const out = mkdtempSync(join(tmpdir(), 'agent-modules-'));
    expect(layout({ root, out, arch: 'amd64' })).toMatchObject({ binary: '@koromix/koffi-linux-x64', fetched: false });
    expect(files(out)).toEqual([
      'node_modules/@koromix/koffi-linux-x64/index.js',
      'node_modules/@koromix/koffi-linux-x64/linux_x64/koffi.node',
      'node_modules/@koromix/koffi-linux-x64/package.json',
      'node_modules/koffi/index.js',
      'node_modules/koffi/package.json',
      'node_modules/koffi/src/koffi/index.js',
      'node_modules/koffi/src/koffi/src/static.js',
    ]);
  });

  /** A tarball shaped like the registry's @koromix/koffi-linux-arm64 (`package/…`), and its integrity. */
  function arm64Tarball(dir: string, version: string): { tarball: string; integrity: string } {
    const pkg = join(dir, 'src/package');
    for (const sub of ['linux_arm64', 'musl_arm64']) mkdirSync(join(pkg, sub), { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: '@koromix/koffi-linux-arm64', version }));
    writeFileSync(join(pkg, 'index.js'), '// loader\n');
    writeFileSync(join(pkg, 'linux_arm64/koffi.node'), 'ELF aarch64 glibc');
    writeFileSync(join(pkg, 'musl_arm64/koffi.node'), 'ELF aarch64 musl');
    const tarball = join(dir, 'koromix-koffi-linux-arm64.tgz');
    execFileSync('tar', ['-czf', tarball, '-C', join(dir, 'src'), 'package']);
    return { tarball, integrity: integrityOf(tarball) };
  }

  it("arm64: fetches the lockfile's version, checks its integrity, keeps the glibc binary alone", () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-modules-'));
    const version = locked(root, '@koromix/koffi-linux-arm64').version;
    const { tarball, integrity } = arm64Tarball(dir, version);
    const asked: string[] = [];
    const r = layout({
      root,
      out: join(dir, 'out'),
      arch: 'arm64',
      fetch: (name, v, into) => {
        asked.push(`${name}@${v}`);
        cpSync(tarball, join(into, 'p.tgz'));
        return join(into, 'p.tgz');
      },
      lock: (name) => (name === 'koffi' ? locked(root, name) : { version, integrity }),
    });
    expect(r).toMatchObject({ binary: '@koromix/koffi-linux-arm64', fetched: true });
    expect(asked).toEqual([`@koromix/koffi-linux-arm64@${version}`]);
    expect(files(join(dir, 'out'))).toEqual([
      'node_modules/@koromix/koffi-linux-arm64/index.js',
      'node_modules/@koromix/koffi-linux-arm64/linux_arm64/koffi.node',
      'node_modules/@koromix/koffi-linux-arm64/package.json',
      'node_modules/koffi/index.js',
      'node_modules/koffi/package.json',
      'node_modules/koffi/src/koffi/index.js',
      'node_modules/koffi/src/koffi/src/static.js',
    ]);
  });

  it("refuses a tarball whose sha512 is not the lockfile's, before unpacking it", () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-modules-'));
    const version = locked(root, '@koromix/koffi-linux-arm64').version;
    const { tarball } = arm64Tarball(dir, version);
    expect(() =>
      layout({
        root,
        out: join(dir, 'out'),
        arch: 'arm64',
        fetch: (_n, _v, into) => (cpSync(tarball, join(into, 'p.tgz')), join(into, 'p.tgz')),
      }),
    ).toThrow(/the tarball's sha512-\S+ is not package-lock.json's sha512-/);
    expect(existsSync(join(dir, 'out/node_modules/@koromix'))).toBe(false);
  });

  it('refuses an architecture the image is not built for, naming those it is', () => {
    expect(() => layout({ root, out: mkdtempSync(join(tmpdir(), 'am-')), arch: 's390x' })).toThrow(
      '--arch s390x: the agent image is built for amd64, arm64',
    );
  });
});

/** The base image's digest: scripts/pin-node-image.js, fed index documents as the registry serves them. */
describe('npm run image:pin (scripts/pin-node-image.js)', () => {
  const index = (platforms: string[], mediaType = 'application/vnd.oci.image.index.v1+json') =>
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType,
        manifests: platforms.map((p, i) => ({
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: `sha256:${String(i).repeat(64)}`,
          size: 1000,
          platform: { os: p.split('/')[0], architecture: p.split('/')[1] },
        })),
      }),
    );

  it("pins the sha256 of the index's exact bytes when it holds linux/amd64 and linux/arm64", () => {
    const raw = index(['linux/amd64', 'linux/arm/v7', 'linux/arm64', 'linux/ppc64le']);
    const digest = indexDigest(raw);
    expect(digest).toBe(`sha256:${execFileSync('sha256sum', { input: raw, encoding: 'utf8' }).split(' ')[0]}`);
    const text = pinned(read('Dockerfile'), 'node:22-bookworm-slim', digest);
    expect(text).toContain(`ARG NODE_IMAGE=node:22-bookworm-slim@${digest}\n`);
    expect(currentTag(text)).toBe('node:22-bookworm-slim');
    expect(currentTag(read('Dockerfile'))).toBe('node:22-bookworm-slim');
  });

  it.each([
    ['an index without arm64', index(['linux/amd64']), /has no linux\/arm64 image/],
    [
      "one platform's manifest",
      Buffer.from(JSON.stringify({ mediaType: 'application/vnd.oci.image.manifest.v1+json' })),
      /not a multi-platform index/,
    ],
    ['not JSON', Buffer.from('<html>'), /did not answer with JSON/],
  ])('refuses %s', (_, raw, error) => {
    expect(() => indexDigest(raw)).toThrow(error);
  });

  it('asks docker buildx for the raw index of the tag the Dockerfile names, and writes the pin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'image-pin-'));
    const raw = index(['linux/amd64', 'linux/arm64']);
    writeFileSync(join(dir, 'index.json'), raw);
    // A stand-in `docker` on PATH: records its arguments, prints the index.
    writeFileSync(join(dir, 'docker'), `#!/bin/sh\necho "$@" > "${dir}/args"\ncat "${dir}/index.json"\n`);
    chmodSync(join(dir, 'docker'), 0o755);
    const dockerfile = join(dir, 'Dockerfile');
    writeFileSync(dockerfile, read('Dockerfile'));
    const script = join(root, 'scripts/pin-node-image.js');
    const r = await promisify(execFile)(process.execPath, [script, '--dockerfile', dockerfile], {
      env: { PATH: `${dir}:${process.env.PATH}` },
    });
    expect(readFileSync(join(dir, 'args'), 'utf8').trim()).toBe(
      'buildx imagetools inspect --raw node:22-bookworm-slim',
    );
    expect(r.stdout).toContain(`pinned node:22-bookworm-slim@${indexDigest(raw)}`);
    expect(readFileSync(dockerfile, 'utf8')).toBe(
      pinned(read('Dockerfile'), 'node:22-bookworm-slim', indexDigest(raw)),
    );
  });
});
