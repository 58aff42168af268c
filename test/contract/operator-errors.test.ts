import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../events/cli-kit/command.ts';
import { main } from '../../bin/main.ts';
import { kubeconfigYaml } from '../../infra/local/kube/kubeconfig.ts';

/**
 * Issue #31's smaller list: what an operator trialling gpu-reflex meets is said in words, naming
 * the file, address or pool, never a raw errno code or "unexpected error".
 */
let dir: string;
let busy: Server;
let busyPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gr-operator-errors-'));
  writeFileSync(join(dir, 'broken-fleet.yaml'), 'nodes: [1,2\n');
  writeFileSync(join(dir, 'wrong-fleet.yaml'), 'nodes: 3\n');
  writeFileSync(join(dir, 'pools.yaml'), 'pools:\n  t4-infer: { pdbDeadlineMinutes: 30 }\n');
  busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
  busyPort = (busy.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((r) => busy.close(r));
  rmSync(dir, { recursive: true, force: true });
});

async function run(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { out: (l) => out.push(l), err: (l) => err.push(l) };
  const code = await main(args, io, {});
  return { code, out, err };
}

describe('said in words', () => {
  it('mig plan names a bad fleet file and what is wrong with it', async () => {
    const broken = await run('mig', 'plan', '--fleet', join(dir, 'broken-fleet.yaml'));
    expect(broken.code).toBe(1);
    expect(broken.err).toEqual([
      expect.stringMatching(/^gpu-reflex mig plan: .*broken-fleet\.yaml: not YAML or JSON: line 2/),
    ]);
    const wrong = await run('mig', 'plan', '--fleet', join(dir, 'wrong-fleet.yaml'));
    expect(wrong.err).toEqual([
      expect.stringMatching(/wrong-fleet\.yaml is invalid: nodes: Invalid input: expected array, received number$/),
    ]);
    expect([...broken.err, ...wrong.err].join('\n')).not.toMatch(/unexpected error/);
  });

  it('mig plan --policy: a malformed file is bad input (exit 1), not bad usage (2)', async () => {
    writeFileSync(join(dir, 'mig-policy.yaml'), 'preemption: [\n');
    const r = await run(
      'mig',
      'plan',
      '--fleet',
      join(import.meta.dirname, '../../infra/local/scenarios/fleets/h100-mig.yaml'),
      '--policy',
      join(dir, 'mig-policy.yaml'),
    );
    expect(r.code).toBe(1);
    expect(r.err).toEqual([
      expect.stringMatching(/^gpu-reflex mig plan: --policy: .*mig-policy\.yaml: not YAML or JSON/),
    ]);
  });

  it('remediate policy --pool says when no rule of the policy names that pool', async () => {
    const typo = await run('remediate', 'policy', join(dir, 'pools.yaml'), '--pool', 't4-infr');
    expect(typo.code).toBe(0);
    expect(typo.err).toEqual([
      'note: no override or profile of this policy names pool "t4-infr" (it names t4-infer): the rules below are ' +
        'the ones every pool gets',
    ]);
    expect((await run('remediate', 'policy', join(dir, 'pools.yaml'), '--pool', 't4-infer')).err).toEqual([]);
  });

  it('bus serve names a missing kubeconfig and a port in use in words, not ENOENT or EADDRINUSE', async () => {
    const missing = await run('bus', 'serve', '--kubeconfig', join(dir, 'missing.yaml'));
    expect(missing.err).toEqual([
      `gpu-reflex bus serve: cannot read kubeconfig ${join(dir, 'missing.yaml')}: no such file or directory`,
    ]);
    writeFileSync(join(dir, 'k.yaml'), kubeconfigYaml('http://127.0.0.1:1'));
    writeFileSync(join(dir, 'not-yaml.yaml'), 'clusters: [\n');
    // A kubeconfig the functions could not load is refused at the start, not found out at each delivery.
    expect((await run('bus', 'serve', '--kubeconfig', join(dir, 'not-yaml.yaml'))).err).toEqual([
      `gpu-reflex bus serve: cannot read kubeconfig ${join(dir, 'not-yaml.yaml')}: not YAML`,
    ]);
    const inUse = await run('bus', 'serve', '--kubeconfig', join(dir, 'k.yaml'), '--port', String(busyPort));
    expect(inUse.code).toBe(1);
    expect(inUse.err).toEqual([`gpu-reflex bus serve: cannot listen on 127.0.0.1:${busyPort}: address already in use`]);
  });

  it('approve says what is wrong with --endpoint, and that AWS credentials are missing, not only "publishing events"', async () => {
    const key = 'GPU_REFLEX_APPROVAL_KEY';
    const saved = process.env[key];
    process.env[key] = 'an-operator-errors-test-key-0123456789abcdef';
    try {
      const bad = await run('approve', 'apr-0000beef', '--endpoint', 'notaurl');
      expect(bad.code).toBe(2);
      expect(bad.err[0]).toMatch(/^gpu-reflex approve: --endpoint "notaurl" is not a URL \(http:\/\/127\.0\.0\.1:PORT/);
    } finally {
      if (saved === undefined) delete process.env[key];
      else process.env[key] = saved;
    }
    // No credentials anywhere (a child process: the SDK's chain reads the environment and ~/.aws).
    const {
      AWS_ACCESS_KEY_ID: _a,
      AWS_SECRET_ACCESS_KEY: _b,
      AWS_PROFILE: _c,
      AWS_SESSION_TOKEN: _d,
      ...rest
    } = process.env;
    const env = {
      ...rest,
      HOME: dir,
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_REGION: 'us-east-1',
      [key]: 'an-operator-errors-test-key-0123456789abcdef',
    };
    delete (env as Record<string, string | undefined>).AWS_ENDPOINT_URL_EVENTBRIDGE;
    const r = await promisify(execFile)(process.execPath, ['bin/gpu-reflex.js', 'approve', 'apr-0000beef'], {
      cwd: join(import.meta.dirname, '../..'),
      env,
      timeout: 60_000,
    }).catch((e: { code: number; stderr: string }) => e);
    expect(r).toMatchObject({ code: 1 });
    expect((r as { stderr: string }).stderr).toContain(
      'gpu-reflex approve: no AWS credentials to put the decision on the bus: set AWS_PROFILE or AWS_ACCESS_KEY_ID',
    );
  }, 60_000);
});
