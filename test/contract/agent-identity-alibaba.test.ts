import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { commandWorks, requireTool } from '../tools.ts';
import { renderOverlay, type K8sObject } from './render-k8s.ts';

/**
 * The node agents on Alibaba Cloud (issue #35): infra/k8s/identity/alibaba-rrsa, rendered by
 * `kubectl kustomize`, against the shipped RAM trust policy and policy (infra/alicloud/node-agent/):
 * the token the pod gets is the one the role trusts (the cluster's RRSA issuer, audience
 * sts.aliyuncs.com, the DaemonSet's own ServiceAccount), where Alibaba's credential chain reads it,
 * and the role may only put events on the bus.
 */
const root = new URL('../../', import.meta.url).pathname;
const kubectl = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));
const json = <T>(p: string) => JSON.parse(readFileSync(`${root}${p}`, 'utf8')) as T;

type Container = {
  name: string;
  env?: { name: string; value?: string }[];
  volumeMounts?: { name: string; mountPath: string }[];
};
type PodSpec = {
  serviceAccountName: string;
  containers: Container[];
  volumes: { name: string; projected?: { sources: { serviceAccountToken?: { audience: string; path: string } }[] } }[];
};
type Trust = {
  Statement: {
    Effect: string;
    Action: string;
    Principal: { Federated: string[] };
    Condition: { StringEquals: Record<string, string> };
  }[];
};

describe("the agents' Alibaba identity (kubectl kustomize)", kubectl.options, () => {
  const objects = (): K8sObject[] => renderOverlay(['identity/alibaba-rrsa']);

  it("the pod's projected token is the one the RAM role trusts, where Alibaba's credential chain reads it", () => {
    const all = objects();
    const ds = all.find((o) => o.kind === 'DaemonSet')!;
    const spec = ds.spec!.template!.spec as unknown as PodSpec;
    const agent = spec.containers.find((c) => c.name === 'agent')!;
    const env = Object.fromEntries((agent.env ?? []).map((e) => [e.name, e.value]));
    const tokens = spec.volumes.flatMap((v) =>
      (v.projected?.sources ?? []).flatMap((s) =>
        s.serviceAccountToken ? [{ volume: v.name, ...s.serviceAccountToken }] : [],
      ),
    );
    expect(tokens).toHaveLength(1);
    const mount = agent.volumeMounts!.find((m) => m.name === tokens[0]!.volume)!;
    expect(env['ALIBABA_CLOUD_OIDC_TOKEN_FILE']).toBe(`${mount.mountPath}/${tokens[0]!.path}`);
    expect(env['ALIBABA_EVENTBRIDGE_ENDPOINT']).toMatch(/^\d{16}\.eventbridge\.[a-z0-9-]+\.aliyuncs\.com$/);

    const trust = json<Trust>('infra/alicloud/node-agent/trust-rrsa.json');
    expect(trust.Statement).toHaveLength(1);
    const [st] = trust.Statement;
    expect(st!.Effect).toBe('Allow');
    expect(st!.Action).toBe('sts:AssumeRole');
    expect(st!.Principal.Federated).toEqual([env['ALIBABA_CLOUD_OIDC_PROVIDER_ARN']]);
    expect(st!.Condition.StringEquals['oidc:aud']).toBe(tokens[0]!.audience);
    expect(st!.Condition.StringEquals['oidc:sub']).toBe(
      `system:serviceaccount:${ds.metadata.namespace}:${spec.serviceAccountName}`,
    );
    // The role, its OIDC provider and the bus in one account; the provider is the cluster's.
    const account = (arn: string | undefined) => arn?.split(':')[3];
    expect(account(env['ALIBABA_CLOUD_ROLE_ARN'])).toBe(account(env['ALIBABA_CLOUD_OIDC_PROVIDER_ARN']));
    expect(env['ALIBABA_EVENTBRIDGE_ENDPOINT']!.split('.')[0]).toBe(account(env['ALIBABA_CLOUD_ROLE_ARN']));
    const cluster = /oidc-provider\/ack-rrsa-(\w+)$/.exec(env['ALIBABA_CLOUD_OIDC_PROVIDER_ARN'] ?? '')?.[1];
    expect(st!.Condition.StringEquals['oidc:iss']).toMatch(new RegExp(`/${cluster}$`));
  });

  it('the role may put events on the bus and nothing else', () => {
    const policy = json<{ Statement: { Effect: string; Action: string[]; Resource: string[] }[] }>(
      'infra/alicloud/node-agent/policy.json',
    );
    expect(policy.Statement.flatMap((s) => s.Action)).toEqual(['eventbridge:PutEvents']);
    for (const s of policy.Statement)
      for (const r of s.Resource) expect(r).toMatch(/^acs:eventbridge:[\w-]+:\d{16}:eventbus\/[\w-]+$/);
  });

  it('docs/deploy-alibaba.md names the component and the role files', () => {
    const doc = readFileSync(`${root}docs/deploy-alibaba.md`, 'utf8');
    for (const f of [
      'infra/k8s/identity/alibaba-rrsa',
      'infra/alicloud/node-agent/trust-rrsa.json',
      'infra/alicloud/node-agent/policy.json',
    ])
      expect(doc, f).toContain(f);
  });
});
