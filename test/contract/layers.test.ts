/**
 * The house's layers (issue #26; the blueprint's "The kernel and its clients" and "The embedded world
 * is independent", docs/architecture.md): each rule below is one direction no production import may
 * take, read with the compiler's parser (static, `export … from`, type-only and literal `import()`).
 * Production = every .ts/.mts/.js/.mjs file under the product's folders but tests (`*.test.ts`) and
 * declarations; test/ and bench/ may reach across to set a scene. Each rule is also run on a planted
 * import of its own example, so a rule that stopped matching fails here too.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { importsOf } from './sim-imports.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const PRODUCT_FOLDERS = ['bin', 'events', 'functions', 'infra', 'node-agent'];
const SOURCE = /\.(ts|mts|js|mjs)$/;

function production(root: string): string[] {
  const out: string[] = [];
  const walk = (p: string) => {
    const abs = join(root, p);
    if (!existsSync(abs)) return;
    if (statSync(abs).isDirectory()) {
      for (const e of readdirSync(abs).sort()) if (e !== 'node_modules') walk(join(p, e));
    } else if (SOURCE.test(p) && !p.endsWith('.test.ts') && !p.endsWith('.d.ts')) out.push(p);
  };
  for (const f of PRODUCT_FOLDERS) walk(f);
  return out;
}

const under =
  (...prefixes: string[]) =>
  (p: string) =>
    prefixes.some((x) => (x.endsWith('/') ? p.startsWith(x) : p === x));
/** `functions/<fn>/…` → fn; undefined outside functions/ and for the files at its top (config.ts). */
const fnOf = (p: string) => (p.startsWith('functions/') && p.split('/').length > 2 ? p.split('/')[1] : undefined);
const KERNEL = under('functions/lib/', 'functions/config.ts');
const ADAPTERS = under('functions/adapters/');
/** A function folder: a reflex or chatops (not the kernel, not the adapters). */
const isFunctionFolder = (p: string) => fnOf(p) !== undefined && fnOf(p) !== 'lib' && fnOf(p) !== 'adapters';
/** The simulators: the real systems, written again from their documentation (the whiteboard's Sims). */
const SIMS = under(
  'infra/local/kube/',
  'infra/local/alicloud/',
  'infra/local/bus/',
  'infra/local/mock-nvml/',
  'infra/local/device-plugin.ts',
  'infra/local/node-gpus.ts',
);
/**
 * Product modules a simulator may still import: a reading aid that decides nothing about the world
 * (test/contract/sim-independence.test.ts UTILITIES, which also follows imports through other files).
 */
const SIM_UTILITIES = new Set(['functions/lib/yaml-text.ts']);

interface Rule {
  name: string;
  from: (file: string) => boolean;
  to: (target: string, from: string) => boolean;
  /** A forbidden import this rule must catch: [importer, imported]. */
  example: [string, string];
}

export const RULES: Rule[] = [
  {
    name: "no function folder imports another, but chatops through each one's public entry",
    from: isFunctionFolder,
    to: (t, f) =>
      isFunctionFolder(t) && fnOf(t) !== fnOf(f) && !(fnOf(f) === 'chatops' && t === `functions/${fnOf(t)}/index.ts`),
    example: ['functions/mig/run.ts', 'functions/quota/core/config.ts'],
  },
  {
    name: 'the kernel serves every reflex and knows none',
    from: KERNEL,
    to: isFunctionFolder,
    example: ['functions/lib/apply.ts', 'functions/remediate/core/words.ts'],
  },
  {
    name: 'ports know no planner: the adapters import neither the kernel nor a function',
    from: ADAPTERS,
    to: (t) => t.startsWith('functions/') && !ADAPTERS(t),
    example: ['functions/adapters/kube/ports.ts', 'functions/lib/plan.ts'],
  },
  {
    name: 'nothing below bin/ imports bin/ (the CLI dispatches down)',
    from: (f) => !f.startsWith('bin/'),
    to: under('bin/'),
    example: ['node-agent/main.ts', 'bin/errors.ts'],
  },
  {
    name: 'production never imports the embedded world (functions/, node-agent/ and events/ import no infra/)',
    from: under('functions/', 'node-agent/', 'events/'),
    to: under('infra/'),
    example: ['functions/quota/cli.ts', 'infra/local/kube/fleet.ts'],
  },
  {
    name: 'a simulator imports no rule it checks (nothing of functions/ or node-agent/)',
    from: SIMS,
    to: (t) => (t.startsWith('functions/') || t.startsWith('node-agent/')) && !SIM_UTILITIES.has(t),
    example: ['infra/local/mock-nvml/build.ts', 'node-agent/nvml/nvml.ts'],
  },
  {
    name: 'the agent and the functions meet only in events/',
    from: under('functions/', 'node-agent/'),
    to: (t, f) => t.split('/')[0] !== f.split('/')[0] && under('functions/', 'node-agent/')(t),
    example: ['node-agent/actuator/runtime.ts', 'functions/lib/plan.ts'],
  },
  {
    name: 'the contract knows no producer and no consumer (events/ imports nothing outside it)',
    from: under('events/'),
    to: (t) => PRODUCT_FOLDERS.some((f) => t.startsWith(`${f}/`)) && !t.startsWith('events/'),
    example: ['events/catalog.ts', 'functions/lib/plan.ts'],
  },
];

/** Each tree's production files and what each imports, read once for all the rules. */
const read = new Map<string, Map<string, string[]>>();
function targets(root: string): Map<string, string[]> {
  let m = read.get(root);
  if (!m) {
    m = new Map(production(root).map((f) => [f, importsOf(root, f).flatMap((i) => (i.target ? [i.target] : []))]));
    read.set(root, m);
  }
  return m;
}

function crossings(root: string, rule: Rule): string[] {
  return [...targets(root)]
    .filter(([f]) => rule.from(f))
    .flatMap(([f, imported]) => imported.filter((t) => rule.to(t, f)).map((t) => `${f} → ${t}`));
}

/**
 * `import()` whose module is an expression: neither this test nor a drawing of the house can see
 * what it loads. Each one left names why it must stay so.
 */
export const EXPRESSION_IMPORTS = new Map<string, string>([
  [
    'infra/local/bus/handler-loader.ts',
    "the local bus runs the handlers serverless.yml names, as Lambda's runtime does (any serverless.yml: " +
      '`gpu-reflex bus serve --config F`); what it loads is the functions under test, never a rule of its own',
  ],
]);

function expressionImports(root: string): string[] {
  return production(root).filter((f) => {
    const src = ts.createSourceFile(f, readFileSync(join(root, f), 'utf8'), ts.ScriptTarget.Latest, false);
    let found = false;
    const visit = (n: ts.Node) => {
      if (
        ts.isCallExpression(n) &&
        n.expression.kind === ts.SyntaxKind.ImportKeyword &&
        !(n.arguments[0] && ts.isStringLiteralLike(n.arguments[0]))
      )
        found = true;
      if (!found) ts.forEachChild(n, visit);
    };
    visit(src);
    return found;
  });
}

describe('layers', () => {
  it.each(RULES.map((r) => [r.name, r] as const))('%s', (_name, rule) => {
    expect(crossings(ROOT, rule)).toEqual([]);
  });

  it('names every import() whose module is an expression, and why it must be one', () => {
    expect(expressionImports(ROOT)).toEqual([...EXPRESSION_IMPORTS.keys()]);
  });
});

describe('the layer check', () => {
  /** A tree holding one file that imports another, as `import`, `import type` or `import()`. */
  function planted(from: string, to: string, how: (spec: string) => string): string {
    const root = mkdtempSync(join(tmpdir(), 'layers-'));
    mkdirSync(join(root, dirname(from)), { recursive: true });
    let spec = relative(dirname(from), to);
    if (!spec.startsWith('.')) spec = `./${spec}`;
    writeFileSync(join(root, from), how(spec));
    return root;
  }

  it.each(RULES.map((r) => [r.name, r] as const))('catches a planted import: %s', (_name, rule) => {
    const [from, to] = rule.example;
    const forms = [
      (s: string) => `import { x } from '${s}';\nexport const y = x;\n`,
      (s: string) => `import type { X } from '${s}';\nexport type Y = X;\n`,
      (s: string) => `export const load = () => import('${s}');\n`,
      (s: string) => `export { x } from '${s}';\n`,
    ];
    for (const form of forms) {
      const root = planted(from, to, form);
      try {
        expect(crossings(root, rule)).toEqual([`${from} → ${to}`]);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    }
  });

  it('sees an import() of an expression', () => {
    const root = planted('infra/local/x.ts', 'functions/y.ts', () => 'export const f = (p: string) => import(p);\n');
    try {
      expect(expressionImports(root)).toEqual(['infra/local/x.ts']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
