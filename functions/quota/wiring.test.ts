import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createQuotaHandler } from './handler.ts';
import { quotaConfigFromEnv, wireQuota } from './wiring.ts';

const dir = mkdtempSync(join(tmpdir(), 'quota-wiring-'));
const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
const KUBECONFIG = file(
  'kubeconfig',
  'apiVersion: v1\nkind: Config\nclusters: [{ name: c, cluster: { server: "http://127.0.0.1:9" } }]\nusers: [{ name: u, user: {} }]\ncontexts: [{ name: x, context: { cluster: c, user: u } }]\ncurrent-context: x\n',
);

describe('rewrite-quotas wiring', () => {
  it('reads the teams file, naming file and field of a mistake', () => {
    expect(quotaConfigFromEnv({})).toBeUndefined();
    expect(
      quotaConfigFromEnv({ QUOTA_CONFIG_FILE: file('ok.yaml', 'teams: [{ name: a, namespaces: [a] }]\n') })?.teams[0]
        ?.name,
    ).toBe('a');
    expect(() => quotaConfigFromEnv({ QUOTA_CONFIG_FILE: file('bad.yaml', 'teams: []\n') })).toThrow(
      /bad\.yaml is invalid:\n {2}teams: /,
    );
    expect(() => quotaConfigFromEnv({ QUOTA_CONFIG_FILE: join(dir, 'missing.yaml') })).toThrow(
      /QUOTA_CONFIG_FILE \S+missing\.yaml: ENOENT/,
    );
  });

  it('manages no team without a teams file: the function reads nothing and says so', async () => {
    const deps = await wireQuota('rewrite-quotas', { KUBECONFIG, LOG_LEVEL: 'error' });
    expect(await createQuotaHandler(() => deps)({}, { awsRequestId: 'r' } as Context)).toEqual({
      status: 'done',
      result: { teams: 0 },
    });
  });

  it("coalesces a storm: an event from before a completed run's start is acknowledged, not run again", async () => {
    const deps = await wireQuota('rewrite-quotas', { KUBECONFIG, LOG_LEVEL: 'error' });
    const h = createQuotaHandler(() => deps);
    const remediation = { 'detail-type': 'Remediation', time: '2026-01-01T00:00:00Z' };
    expect(await h(remediation, { awsRequestId: 'r1' } as Context)).toMatchObject({ status: 'done' });
    expect(await h(remediation, { awsRequestId: 'r2' } as Context)).toMatchObject({ status: 'already-done' });
  });

  it('keeps the teams apart from the shared configuration', async () => {
    const deps = await wireQuota('rewrite-quotas', {
      KUBECONFIG,
      LOG_LEVEL: 'error',
      QUOTA_CONFIG_FILE: file('two.yaml', 'teams: [{ name: a, namespaces: [a] }, { name: b, namespaces: [b] }]\n'),
    });
    expect(deps.quotaConfig?.teams.map((t) => t.name)).toEqual(['a', 'b']);
    expect(deps.config.EVENT_BUS_NAME).toBe('gpu-reflex');
  });
});
