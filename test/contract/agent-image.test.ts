import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
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
    expect(read('Dockerfile')).toMatch(/^ARG NODE_IMAGE=node:(20|22)-[a-z]+-slim$/m);
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

  it('copies into the runtime stage only from the build stage: its bundle and koffi with the linux x64 binary alone', () => {
    for (const c of runtime.copies) {
      for (const src of c.sources) {
        const inRepo = relative(build.workdir, src);
        expect(src.startsWith(`${build.workdir}/`), `Dockerfile:${c.line}: ${src}`).toBe(true);
        // .build/ is what `npm run build` writes (build.test.ts builds it and runs the agent from
        // this layout); the rest comes from npm ci.
        if (!inRepo.startsWith('.build/'))
          expect(existsSync(join(root, inRepo)), `Dockerfile:${c.line}: ${src}`).toBe(true);
        expect(inRepo).toMatch(
          /^(\.build\/node-agent(\/|$)|node_modules\/koffi\/|node_modules\/@koromix\/koffi-linux-x64\/)/,
        );
        expect(inRepo).not.toMatch(/musl/);
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
