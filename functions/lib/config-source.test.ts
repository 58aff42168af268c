import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config.ts';
import { configTextFromEnv, resolveConfigParameters } from './config-source.ts';

const never = async (): Promise<string | undefined> => {
  throw new Error('no store here');
};

describe('policies from Parameter Store', () => {
  it("turns each _PARAMETER into the policy's text, and says where it came from", async () => {
    const asked: string[] = [];
    const r = await resolveConfigParameters(
      { MIG_POLICY_PARAMETER: '/gpu-reflex/prod/config/mig-policy' },
      async (name) => (asked.push(name), 'preemption: { enabled: true }\n'),
    );
    expect(asked).toEqual(['/gpu-reflex/prod/config/mig-policy']);
    expect(configTextFromEnv(r.env, 'MIG_POLICY_FILE', () => '')).toEqual({
      text: 'preemption: { enabled: true }\n',
      source: 'MIG_POLICY_PARAMETER (ssm:/gpu-reflex/prod/config/mig-policy)',
    });
    expect(r.read).toEqual(['/gpu-reflex/prod/config/mig-policy']);
  });

  it('a parameter that does not exist is the defaults, listed so the wiring can say so', async () => {
    const r = await resolveConfigParameters({ QUOTA_CONFIG_PARAMETER: '/p/quota-config' }, async () => undefined);
    expect(r.missing).toEqual([
      { variable: 'QUOTA_CONFIG_PARAMETER', parameter: '/p/quota-config', label: 'quota config' },
    ]);
    expect(configTextFromEnv(r.env, 'QUOTA_CONFIG_FILE', () => 'from a file')).toBeUndefined();
  });

  it('refuses two spellings of one policy, and names a store that failed', async () => {
    await expect(
      resolveConfigParameters({ MIG_POLICY_FILE: '/etc/mig.yaml', MIG_POLICY_PARAMETER: '/p/mig-policy' }, never),
    ).rejects.toThrow(/MIG_POLICY_FILE and MIG_POLICY_PARAMETER are both set; the MIG policy comes from one of them/);
    const err = await resolveConfigParameters({ MIG_POLICY_PARAMETER: '/p/mig-policy' }, never).catch((e: Error) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect(String(err)).toMatch(/MIG_POLICY_PARAMETER: no store here/);
  });

  it('reads a file as before, and names the variable and file when it cannot', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-source-'));
    writeFileSync(join(dir, 'q.yaml'), 'teams: []\n');
    const read = (p: string) =>
      p.endsWith('q.yaml')
        ? 'teams: []\n'
        : (() => {
            throw Object.assign(new Error('x'), { code: 'ENOENT' });
          })();
    expect(configTextFromEnv({ QUOTA_CONFIG_FILE: join(dir, 'q.yaml') }, 'QUOTA_CONFIG_FILE', read)?.text).toBe(
      'teams: []\n',
    );
    expect(() => configTextFromEnv({ QUOTA_CONFIG_FILE: '/nope.yaml' }, 'QUOTA_CONFIG_FILE', read)).toThrow(
      'bad configuration: QUOTA_CONFIG_FILE /nope.yaml: ENOENT',
    );
  });
});

describe('a deployed function reads its policy from Parameter Store (through the SDK)', () => {
  const KUBECONFIG_TEXT =
    'apiVersion: v1\nkind: Config\nclusters: [{ name: c, cluster: { server: "http://127.0.0.1:9" } }]\nusers: [{ name: u, user: {} }]\ncontexts: [{ name: x, context: { cluster: c, user: u } }]\ncurrent-context: x\n';

  async function wireMigWith(answer: (name: string) => { status: number; body: object }) {
    const { fakeSsm, AWS_ENV } = await import('../adapters/ssm-stand-in.ts');
    const { withEnv } = await import('../../infra/local/stack-env.ts');
    const { wireMig } = await import('../mig/wiring.ts');
    const ssm = await fakeSsm(answer);
    const kubeconfig = join(mkdtempSync(join(tmpdir(), 'config-param-')), 'kubeconfig');
    writeFileSync(kubeconfig, KUBECONFIG_TEXT);
    const lines: string[] = [];
    const restore = withEnv({ ...AWS_ENV, AWS_ENDPOINT_URL_SSM: ssm.url });
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => (lines.push(String(chunk)), true)) as typeof process.stdout.write;
    try {
      const wired = await wireMig('rebalance-mig', {
        ...AWS_ENV,
        AWS_ENDPOINT_URL_SSM: ssm.url,
        KUBECONFIG: kubeconfig,
        LOG_LEVEL: 'warn',
        MIG_POLICY_PARAMETER: '/gpu-reflex/prod/config/mig-policy',
      }).catch((e: Error) => e);
      return { wired, requests: ssm.requests, lines };
    } finally {
      process.stdout.write = write;
      restore();
      ssm.server.close();
    }
  }

  const found = (value: string) => (name: string) => ({
    status: 200,
    body: { Parameter: { Name: name, Type: 'String', Value: value, Version: 3 } },
  });

  it('the parameter decides the policy, and the wiring renews within 5 minutes to read it again', async () => {
    const { wired, requests } = await wireMigWith(found('preemption:\n  enabled: true\n  minPriorityGap: 5000\n'));
    if (wired instanceof Error) throw wired;
    expect(requests.map((r) => r.body['Name'])).toEqual(['/gpu-reflex/prod/config/mig-policy']);
    expect(wired.mig.preemption).toMatchObject({ enabled: true, minPriorityGap: 5000 });
    expect(wired.renewAt).toBeDefined();
    expect(wired.renewAt! - wired.clock.now()).toBeLessThanOrEqual(5 * 60_000);
  });

  it('refuses a bad policy with the words `gpu-reflex config check` prints for the same text', async () => {
    const { wired } = await wireMigWith(found('preemption:\n  minPriorityGap: 0\n'));
    expect(wired).toBeInstanceOf(ConfigError);
    const { parseMigPolicy } = await import('../mig/core/policy.ts');
    const cli = (() => {
      try {
        parseMigPolicy(
          'preemption:\n  minPriorityGap: 0\n',
          'MIG_POLICY_PARAMETER (ssm:/gpu-reflex/prod/config/mig-policy)',
        );
      } catch (e) {
        return (e as Error).message;
      }
    })();
    expect(cli).toMatch(/minPriorityGap/);
    expect((wired as Error).message).toBe(`bad configuration: ${cli}`);
  });

  it('a parameter not yet put is the defaults, and a warning says how to put it', async () => {
    const { wired, lines } = await wireMigWith(() => ({
      status: 400,
      body: { __type: 'ParameterNotFound', message: 'not found' },
    }));
    if (wired instanceof Error) throw wired;
    expect(wired.mig.preemption?.enabled).toBe(false);
    expect(lines.join('')).toMatch(/no MIG policy at ssm:\/gpu-reflex\/prod\/config\/mig-policy: the defaults apply/);
    expect(lines.join('')).toMatch(/aws ssm put-parameter --name \/gpu-reflex\/prod\/config\/mig-policy/);
  });
});
