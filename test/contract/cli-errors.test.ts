/**
 * The CLI never shows a stack trace: every way of handing a command bad input ends in exactly
 * one line on stderr and exit 1 (2 for usage). Most rows run in-process through main() (the same
 * dispatcher and error report as the binary, without paying ~1 s per tsx process); a few run the
 * real binary to prove the process entry reports the same way.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CliIo } from '../../events/cli-kit/command.ts';
import { commands, main } from '../../bin/main.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EVENT = join(ROOT, 'events/catalog/gpu-xid-error.example.json');

/** Nine levels of nine aliases: 9^9 strings if expanded. */
const ALIAS_BOMB = [
  'a: &a ["x","x","x","x","x","x","x","x","x"]',
  ...'bcdefghi'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`),
].join('\n');

let dir: string;
let busy: Server;
let busyPort: number;
const f = (name: string) => join(dir, name);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gr-cli-errors-'));
  mkdirSync(f('a-dir'));
  const files: Record<string, string> = {
    'null.json': 'null',
    'array.json': '[]',
    'number.json': '42',
    'empty.json': '',
    'broken.json': '{ "detail-type": ',
    'broken.yaml': 'nodes: [\n',
    'bomb.yaml': ALIAS_BOMB,
    'wrong-detail.json': JSON.stringify({ 'detail-type': 'GPU XID Error', detail: { xid: 'seventy-nine' } }),
    'facts-bad.json': JSON.stringify({ pods: [{ name: 'p' }] }),
    'kubeconfig-broken.yaml': 'clusters: [\n',
    // A kubeconfig that loads (nothing listens there): bus serve insists on a cluster for its functions.
    'kubeconfig-ok.yaml':
      'apiVersion: v1\nkind: Config\nclusters: [{ name: c, cluster: { server: "http://127.0.0.1:9" } }]\nusers: [{ name: u, user: {} }]\ncontexts: [{ name: x, context: { cluster: c, user: u } }]\ncurrent-context: x\n',
    'existing-file': 'x',
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(f(name), text);
  busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  busyPort = (busy.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((resolve) => busy.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

function capture(readInput?: CliIo['readInput']): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (l) => stdout.push(...l.split('\n')),
    err: (l) => stderr.push(...l.split('\n')),
    ...(readInput ? { readInput } : {}),
  };
}

type Row = [what: string, argv: () => string[], exitCode: 1 | 2, line: RegExp];

const rows: Row[] = [
  // Usage: unknown option, missing value, bad value.
  [
    'events list: unknown option',
    () => ['events', 'list', '--bogus'],
    2,
    /^gpu-reflex events list: Unknown option '--bogus' \(see gpu-reflex events list --help\)$/,
  ],
  ['events validate: unknown option', () => ['events', 'validate', '--bogus'], 2, /Unknown option '--bogus'/],
  [
    'events schemas: --out without its value',
    () => ['events', 'schemas', '--out'],
    2,
    /Option '--out <value>' argument missing/,
  ],
  ['bench: unknown option', () => ['bench', '--bogus'], 2, /^gpu-reflex bench: Unknown option '--bogus'/],
  ['bench: --record without its value', () => ['bench', '--record'], 2, /--record <value>' argument missing/],
  [
    'remediate plan: unknown option',
    () => ['remediate', 'plan', '--bogus'],
    2,
    /^gpu-reflex remediate plan: Unknown option '--bogus'/,
  ],
  [
    'remediate policy: unknown option',
    () => ['remediate', 'policy', '--bogus'],
    2,
    /^gpu-reflex remediate policy: Unknown option '--bogus'/,
  ],
  [
    'remediate plan: a bad --now',
    () => ['remediate', 'plan', EVENT, '--now', 'soon'],
    2,
    /--now: expected an ISO time \(got "soon"\)/,
  ],
  [
    'events: no subcommand',
    () => ['events'],
    2,
    /^gpu-reflex events: name a command; choose one of: list, validate, schemas/,
  ],
  ['events: an unknown subcommand', () => ['events', 'frob'], 2, /unknown command "frob"/],
  [
    'cluster serve: a bad port',
    () => ['cluster', 'serve', '--port', '99999'],
    2,
    /--port must be an integer from 0 to 65535/,
  ],
  ['bus serve: a bad account', () => ['bus', 'serve', '--account', 'abc'], 2, /--account must be 12 digits/],
  // remediate: policy, facts, kubeconfig and event files.
  [
    'remediate policy: a missing file',
    () => ['remediate', 'policy', f('missing.yaml')],
    1,
    /^gpu-reflex remediate policy: cannot read policy file \S+missing\.yaml: no such file or directory$/,
  ],
  [
    'remediate policy: a directory',
    () => ['remediate', 'policy', f('a-dir')],
    1,
    /cannot read policy file \S+a-dir: is a directory$/,
  ],
  [
    'remediate policy: an alias bomb',
    () => ['remediate', 'policy', f('bomb.yaml')],
    1,
    /bomb\.yaml: Excessive alias count/,
  ],
  [
    'remediate plan: a missing --policy',
    () => ['remediate', 'plan', EVENT, '--policy', f('missing.yaml')],
    1,
    /cannot read --policy \S+missing\.yaml: no such file or directory$/,
  ],
  [
    'remediate plan: a --policy directory',
    () => ['remediate', 'plan', EVENT, '--policy', f('a-dir')],
    1,
    /cannot read --policy \S+a-dir: is a directory$/,
  ],
  [
    'remediate plan: an alias bomb as --policy',
    () => ['remediate', 'plan', EVENT, '--policy', f('bomb.yaml')],
    1,
    /bomb\.yaml: Excessive alias count/,
  ],
  [
    'remediate plan: an array as --policy',
    () => ['remediate', 'plan', EVENT, '--policy', f('array.json')],
    1,
    /array\.json:1: \(top level\): .*expected object/,
  ],
  [
    'remediate plan: a missing --facts',
    () => ['remediate', 'plan', EVENT, '--facts', f('missing.json')],
    1,
    /cannot read --facts \S+missing\.json: no such file or directory$/,
  ],
  [
    'remediate plan: a --facts directory',
    () => ['remediate', 'plan', EVENT, '--facts', f('a-dir')],
    1,
    /cannot read --facts \S+a-dir: is a directory$/,
  ],
  [
    'remediate plan: --facts holding null',
    () => ['remediate', 'plan', EVENT, '--facts', f('null.json')],
    1,
    /--facts \S+null\.json: expected a JSON object, got null$/,
  ],
  [
    'remediate plan: --facts not JSON',
    () => ['remediate', 'plan', EVENT, '--facts', f('broken.json')],
    1,
    /--facts \S+broken\.json is not valid JSON: /,
  ],
  [
    'remediate plan: an empty --facts',
    () => ['remediate', 'plan', EVENT, '--facts', f('empty.json')],
    1,
    /--facts \S+empty\.json is empty: expected a JSON object$/,
  ],
  [
    'remediate plan: --facts failing its schema',
    () => ['remediate', 'plan', EVENT, '--facts', f('facts-bad.json')],
    1,
    /--facts \S+facts-bad\.json: pods\.0\.namespace: .* \(and \d+ more\)$/,
  ],
  [
    'remediate plan: a missing --kubeconfig',
    () => ['remediate', 'plan', EVENT, '--kubeconfig', f('missing.yaml')],
    1,
    /cannot read --kubeconfig \S+missing\.yaml: no such file or directory$/,
  ],
  [
    'remediate plan: a --kubeconfig directory',
    () => ['remediate', 'plan', EVENT, '--kubeconfig', f('a-dir')],
    1,
    /cannot read --kubeconfig \S+a-dir: is a directory$/,
  ],
  [
    'remediate plan: a --kubeconfig that is not YAML',
    () => ['remediate', 'plan', EVENT, '--kubeconfig', f('kubeconfig-broken.yaml')],
    1,
    /kube access: cannot load .*kubeconfig-broken\.yaml: not valid YAML: /,
  ],
  [
    'remediate plan: an event file holding null',
    () => ['remediate', 'plan', f('null.json')],
    1,
    /event file \S+null\.json: expected a JSON object, got null$/,
  ],
  [
    'remediate plan: an event file holding an array',
    () => ['remediate', 'plan', f('array.json')],
    1,
    /event file \S+array\.json: expected a JSON object, got an array$/,
  ],
  [
    'remediate plan: an event file holding a number',
    () => ['remediate', 'plan', f('number.json')],
    1,
    /event file \S+number\.json: expected a JSON object, got a number$/,
  ],
  [
    'remediate plan: an empty event file',
    () => ['remediate', 'plan', f('empty.json')],
    1,
    /event file \S+empty\.json is empty/,
  ],
  [
    'remediate plan: a missing event file',
    () => ['remediate', 'plan', f('missing.json')],
    1,
    /cannot read event file \S+missing\.json: no such file or directory$/,
  ],
  [
    'remediate plan: an event whose detail fails its schema',
    () => ['remediate', 'plan', f('wrong-detail.json')],
    1,
    /event file \S+wrong-detail\.json: detail\.\w+: /,
  ],
  [
    'remediate plan: an event that is not a GPU fault',
    () => ['remediate', 'plan', join(ROOT, 'events/catalog/remediation.example.json')],
    1,
    /got detail-type "Remediation"$/,
  ],
  // cluster serve: fleet, port, host, kubeconfig output.
  [
    'cluster serve: a missing fleet',
    () => ['cluster', 'serve', '--fleet', f('missing.yaml')],
    1,
    /^gpu-reflex cluster serve: cannot read --fleet \S+missing\.yaml: no such file or directory$/,
  ],
  [
    'cluster serve: a fleet directory',
    () => ['cluster', 'serve', '--fleet', f('a-dir')],
    1,
    /cannot read --fleet \S+a-dir: is a directory$/,
  ],
  [
    'cluster serve: a fleet that is not YAML',
    () => ['cluster', 'serve', '--fleet', f('broken.yaml')],
    1,
    /broken\.yaml: not YAML or JSON: line 2, column 1: /,
  ],
  [
    'cluster serve: an alias bomb as fleet',
    () => ['cluster', 'serve', '--fleet', f('bomb.yaml')],
    1,
    /bomb\.yaml: not YAML or JSON: Excessive alias count/,
  ],
  [
    'cluster serve: an array as fleet',
    () => ['cluster', 'serve', '--fleet', f('array.json')],
    1,
    /array\.json is invalid: \(root\): .*expected object/,
  ],
  [
    'cluster serve: a port in use',
    () => ['cluster', 'serve', '--port', String(busyPort), '--kubeconfig-out', f('kc-1')],
    1,
    /^gpu-reflex cluster serve: cannot listen on 127\.0\.0\.1:\d+: address already in use$/,
  ],
  [
    'cluster serve: a host that is no address',
    () => ['cluster', 'serve', '--host', '256.1.1.1', '--kubeconfig-out', f('kc-2')],
    1,
    /cannot resolve host "256\.1\.1\.1"/,
  ],
  [
    'cluster serve: --kubeconfig-out a directory',
    () => ['cluster', 'serve', '--kubeconfig-out', f('a-dir')],
    1,
    /cannot write --kubeconfig-out \S+a-dir: is a directory, expected a file$/,
  ],
  [
    'cluster serve: --kubeconfig-out in a missing folder',
    () => ['cluster', 'serve', '--kubeconfig-out', f('no/such/kc')],
    1,
    /cannot write --kubeconfig-out \S+kc: folder \S+such does not exist$/,
  ],
  // alicloud serve: cloud file, port, host, connection output.
  [
    'alicloud serve: a missing cloud file',
    () => ['alicloud', 'serve', '--fleet', f('missing.yaml')],
    1,
    /^gpu-reflex alicloud serve: cannot read --fleet \S+missing\.yaml: no such file or directory$/,
  ],
  [
    'alicloud serve: an array as cloud file',
    () => ['alicloud', 'serve', '--fleet', f('array.json')],
    1,
    /array\.json is invalid: \(root\): .*expected object/,
  ],
  [
    'alicloud serve: a port in use',
    () => ['alicloud', 'serve', '--port', String(busyPort)],
    1,
    /^gpu-reflex alicloud serve: cannot listen on 127\.0\.0\.1:\d+: address already in use$/,
  ],
  [
    'alicloud serve: a host that is no address',
    () => ['alicloud', 'serve', '--host', '256.1.1.1'],
    1,
    /cannot resolve host "256\.1\.1\.1"/,
  ],
  [
    'alicloud serve: --out a directory',
    () => ['alicloud', 'serve', '--out', f('a-dir')],
    1,
    /cannot write --out \S+a-dir: is a directory, expected a file$/,
  ],
  // bus serve.
  [
    'bus serve: a host that is no address',
    () => ['bus', 'serve', '--kubeconfig', f('kubeconfig-ok.yaml'), '--host', '256.1.1.1'],
    1,
    /^gpu-reflex bus serve: cannot resolve host "256\.1\.1\.1"/,
  ],
  [
    'bus serve: a port in use',
    () => ['bus', 'serve', '--kubeconfig', f('kubeconfig-ok.yaml'), '--port', String(busyPort)],
    1,
    /cannot listen on 127\.0\.0\.1:\d+: address already in use$|address already in use/,
  ],
  [
    'bus serve: a serverless.yml that is not YAML',
    () => ['bus', 'serve', '--serverless', f('broken.yaml')],
    1,
    /broken\.yaml: not valid YAML: line 2, column 1: /,
  ],
  [
    'bus serve: an alias bomb as serverless.yml',
    () => ['bus', 'serve', '--serverless', f('bomb.yaml')],
    1,
    /bomb\.yaml: not valid YAML: Excessive alias count/,
  ],
  [
    'bus serve: --dlq a directory',
    () => ['bus', 'serve', '--dlq', f('a-dir')],
    1,
    /cannot write --dlq \S+a-dir: is a directory, expected a file$/,
  ],
  // events.
  [
    'events schemas: --out an existing file',
    () => ['events', 'schemas', '--out', f('existing-file')],
    1,
    /^gpu-reflex events schemas: --out \S+existing-file exists and is not a folder$/,
  ],
  [
    // Node's recursive mkdir never returns here (the kernel answers ENOENT under /proc): it hung.
    'events schemas: --out a folder the kernel will not create (/proc)',
    () => ['events', 'schemas', '--out', '/proc/gpu-reflex-schemas'],
    1,
    /^gpu-reflex events schemas: cannot create --out \/proc\/gpu-reflex-schemas: no such file or directory$/,
  ],
  ['events validate: a directory', () => ['events', 'validate', f('a-dir')], 1, /a-dir: cannot read: is a directory$/],
  // local and simulate: every input checked before the stack starts.
  [
    'local: a missing scenario',
    () => ['local', '--scenario', f('missing.yaml')],
    1,
    /^gpu-reflex local: cannot read --scenario \S+missing\.yaml: no such file or directory$/,
  ],
  [
    'simulate: a scenario directory',
    () => ['simulate', '--scenario', f('a-dir')],
    1,
    /cannot read --scenario \S+a-dir: is a directory$/,
  ],
  [
    'simulate: a scenario holding null',
    () => ['simulate', '--scenario', f('null.json')],
    1,
    /null\.json is invalid: name: .*; durationSeconds: /,
  ],
  [
    'simulate: an alias bomb as scenario',
    () => ['simulate', '--scenario', f('bomb.yaml')],
    1,
    /bomb\.yaml: not YAML or JSON: Excessive alias count/,
  ],
  [
    'simulate: --report a directory',
    () => ['simulate', '--report', f('a-dir')],
    1,
    /cannot write --report \S+a-dir: is a directory, expected a file$/,
  ],
  [
    'local: a missing --kubeconfig',
    () => ['local', '--kubeconfig', f('missing.yaml')],
    1,
    /cannot read --kubeconfig \S+missing\.yaml: no such file or directory$/,
  ],
  [
    'bench: --record a directory, refused before any suite runs',
    () => ['bench', 'bus', '--record', f('a-dir')],
    1,
    /^gpu-reflex bench: cannot write --record \S+a-dir: is a directory, expected a file$/,
  ],
  // pattern test and xid scan.
  [
    'pattern test: an event holding null',
    () => ['pattern', 'test', '--pattern', join(ROOT, 'events/patterns/remediate.json'), '--event', f('null.json')],
    1,
    /--event file "\S+null\.json" must hold a JSON object$/,
  ],
  [
    'xid scan: a directory',
    () => ['xid', 'scan', f('a-dir')],
    1,
    /^gpu-reflex xid scan: cannot read \S+a-dir: is a directory$/,
  ],
];

describe('every CLI error is one line and an exit code', () => {
  it.each(rows)('%s', async (_what, argv, exitCode, line) => {
    const io = capture();
    expect(await main(argv(), io, {})).toBe(exitCode);
    expect(io.stderr).toHaveLength(1);
    expect(io.stderr[0]).toMatch(line);
    expect(io.stderr[0]).not.toMatch(/^\s+at /);
  });

  it('says "permission denied" for an unreadable file', async () => {
    // Tests may run as root, which reads any file: the refusal is injected where the file is read.
    const denied = () =>
      Promise.reject(
        Object.assign(new Error('EACCES: permission denied'), {
          code: 'EACCES',
          syscall: 'open',
          path: '/root/p.yaml',
        }),
      );
    const io = capture(denied);
    expect(await main(['remediate', 'policy', '/root/p.yaml'], io, {})).toBe(1);
    expect(io.stderr).toEqual(['gpu-reflex remediate policy: cannot read policy file /root/p.yaml: permission denied']);
  });

  it('names the variable of a bad agent environment in one line, exit 2', async () => {
    vi.stubEnv('SAMPLE_INTERVAL_MS', 'soon');
    try {
      const io = capture();
      expect(await main(['agent', '--once'], io, {})).toBe(2);
      expect(io.stderr).toEqual([
        expect.stringMatching(
          /^gpu-reflex agent: invalid node-agent environment: SAMPLE_INTERVAL_MS: .*\(got "soon"\)$/,
        ),
      ]);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('reports our own bug in one line with a hint, and its stack only with --debug or GPU_REFLEX_DEBUG=1', async () => {
    commands.push({
      path: ['test-bug'],
      summary: 'throws a TypeError',
      load: async () => ({
        path: ['test-bug'],
        summary: '',
        help: '',
        run: async () => (null as unknown as { x: number }).x,
      }),
    });
    try {
      const plain = capture();
      expect(await main(['test-bug'], plain, {})).toBe(1);
      expect(plain.stderr).toEqual([
        expect.stringMatching(
          /^gpu-reflex test-bug: unexpected error: TypeError: .* \(run with --debug for details\)$/,
        ),
      ]);
      for (const [argv, env] of [
        [['test-bug', '--debug'], {}],
        [['test-bug'], { GPU_REFLEX_DEBUG: '1' }],
      ] as const) {
        const debug = capture();
        expect(await main([...argv], debug, env)).toBe(1);
        expect(debug.stderr[0]).toMatch(/^gpu-reflex test-bug: unexpected error: TypeError: /);
        expect(debug.stderr[0]).not.toContain('run with --debug');
        expect(debug.stderr.some((l) => /^\s+at /.test(l))).toBe(true);
      }
    } finally {
      commands.pop();
    }
  });
});

describe('help', () => {
  it.each([...new Set(commands.filter((c) => c.path.length > 1).map((c) => c.path[0]!))])(
    'gpu-reflex %s --help lists its commands, exit 0',
    async (group) => {
      const io = capture();
      expect(await main([group, '--help'], io, {})).toBe(0);
      expect(io.stderr).toEqual([]);
      for (const c of commands.filter((x) => x.path[0] === group))
        expect(io.stdout.join('\n')).toContain(c.path.join(' '));
    },
  );

  it('pattern test --help names example files that exist', async () => {
    const io = capture();
    expect(await main(['pattern', 'test', '--help'], io, {})).toBe(0);
    const named = [...io.stdout.join('\n').matchAll(/--(?:pattern|event) (\S+\.json)/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(0);
    for (const file of named) expect(existsSync(join(ROOT, file)), file).toBe(true);
  });
});

/** The real binary: the process entry reports the same one line, with no stack. */
function run(argv: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/gpu-reflex.js', ...argv],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '' } },
      (err, _stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr });
      },
    );
  });
}

/**
 * The process entry with one extra command whose error escapes main (a rejection nobody awaits,
 * as a server's late failure would): the process-level report must catch it.
 */
const ESCAPING = `
const { register } = await import('tsx/esm/api');
register();
const { commands, runProcess } = await import('./bin/main.ts');
commands.push({ path: ['escape'], summary: '', load: async () => ({ path: ['escape'], summary: '', help: '', run: () => {
  void Promise.reject(new Error('failed after start'));
  return new Promise(() => {});
} }) });
await runProcess(['escape']);`;

function runEscaping(): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', ESCAPING],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '' } },
      (err, _stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr });
      },
    );
  });
}

describe('the gpu-reflex binary', () => {
  // Four processes, each loading the CLI through tsx: ~20 s on a 2-core machine under load, so a
  // wide limit (a test that fails only because the machine is busy proves nothing).
  it(
    'prints one line and no stack for usage, file and port errors, and for an error escaping the command',
    { timeout: 180_000 },
    async () => {
      const [usage, file, port, escaped] = await Promise.all([
        run(['events', 'list', '--bogus']),
        run(['remediate', 'policy', f('bomb.yaml')]),
        run(['cluster', 'serve', '--port', String(busyPort), '--kubeconfig-out', f('kc-3')]),
        runEscaping(),
      ]);
      expect(escaped).toEqual({
        code: 1,
        stderr: 'gpu-reflex: unexpected error: Error: failed after start (run with --debug for details)\n',
      });
      expect(usage).toEqual({
        code: 2,
        stderr: "gpu-reflex events list: Unknown option '--bogus' (see gpu-reflex events list --help)\n",
      });
      expect(file.code).toBe(1);
      expect(file.stderr).toMatch(/^\S+bomb\.yaml: Excessive alias count[^\n]*\n$/);
      expect(port.code).toBe(1);
      expect(port.stderr).toMatch(
        /^gpu-reflex cluster serve: cannot listen on 127\.0\.0\.1:\d+: address already in use\n$/,
      );
    },
  );
});
