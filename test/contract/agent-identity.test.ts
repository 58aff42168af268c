import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { commandWorks, requireTool } from '../tools.ts';
import { renderOverlay, type K8sObject } from './render-k8s.ts';

/**
 * The node agents' AWS identity for PutEvents (docs/deploy.md#the-agents-aws-identity): the shipped
 * components (infra/k8s/identity/), rendered by `kubectl kustomize`, against the shipped IAM trust
 * policies (infra/aws/node-agent/): the role each trusts is the ServiceAccount the DaemonSet runs as,
 * and the token it takes is the one the pod gets.
 */
const root = new URL('../../', import.meta.url).pathname;
const kubectl = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));

type Trust = {
  Statement: {
    Effect: string;
    Principal: { Federated?: string; Service?: string };
    Action: string | string[];
    Condition: { StringEquals: Record<string, string> };
  }[];
};
const trust = (name: string) =>
  JSON.parse(readFileSync(`${root}infra/aws/node-agent/trust-${name}.json`, 'utf8')) as Trust;
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
const agentOf = (objects: K8sObject[]) => {
  const ds = objects.find((o) => o.kind === 'DaemonSet')!;
  const spec = ds.spec!.template!.spec as unknown as PodSpec;
  return { ds, spec, container: spec.containers.find((c) => c.name === 'agent')! };
};
/** `system:serviceaccount:<ns>:<name>`, the subject Kubernetes puts in the pod's token. */
const subject = (objects: K8sObject[]) => {
  const { ds, spec } = agentOf(objects);
  return `system:serviceaccount:${ds.metadata.namespace}:${spec.serviceAccountName}`;
};

/** A web-identity trust: the issuer's provider, its sub and aud, nothing looser. */
function checkWebIdentity(t: Trust, sub: string, aud: string): string {
  expect(t.Statement).toHaveLength(1);
  const [st] = t.Statement;
  expect(st!.Effect).toBe('Allow');
  expect(st!.Action).toBe('sts:AssumeRoleWithWebIdentity');
  const issuer = /^arn:aws:iam::\d{12}:oidc-provider\/(.+)$/.exec(st!.Principal.Federated ?? '')?.[1];
  expect(issuer, 'an IAM OIDC provider ARN').toBeDefined();
  expect(st!.Condition.StringEquals).toEqual({ [`${issuer}:sub`]: sub, [`${issuer}:aud`]: aud });
  return st!.Principal.Federated!.split(':')[4]!;
}

describe("the agents' AWS identity (kubectl kustomize)", kubectl.options, () => {
  it("IRSA: the ServiceAccount names a role whose trust admits exactly that ServiceAccount's tokens", () => {
    const objects = renderOverlay(['identity/irsa']);
    const { ds, spec } = agentOf(objects);
    const sa = objects.find(
      (o) =>
        o.kind === 'ServiceAccount' &&
        o.metadata.name === spec.serviceAccountName &&
        o.metadata.namespace === ds.metadata.namespace,
    )!;
    const role = sa.metadata.annotations?.['eks.amazonaws.com/role-arn'];
    expect(role).toMatch(/^arn:aws:iam::\d{12}:role\/[\w+=,.@-]+$/);
    // EKS's webhook projects the token for sts.amazonaws.com (its default audience).
    const account = checkWebIdentity(trust('irsa'), subject(objects), 'sts.amazonaws.com');
    expect(role!.split(':')[4], 'the role and its OIDC provider in one account').toBe(account);
    // The base has no annotation: IRSA is opt-in.
    const base = renderOverlay([]).find((o) => o.kind === 'ServiceAccount' && o.metadata.name === sa.metadata.name)!;
    expect(base.metadata.annotations?.['eks.amazonaws.com/role-arn']).toBeUndefined();
  });

  it("ACK RRSA: the pod's projected token is the one the AWS role trusts, where the AWS SDK reads it", () => {
    const objects = renderOverlay(['identity/ack-rrsa']);
    const { spec, container } = agentOf(objects);
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
    expect(env.AWS_ROLE_ARN).toMatch(/^arn:aws:iam::\d{12}:role\/[\w+=,.@-]+$/);
    const tokens = spec.volumes.flatMap((v) =>
      (v.projected?.sources ?? []).flatMap((s) =>
        s.serviceAccountToken ? [{ volume: v.name, ...s.serviceAccountToken }] : [],
      ),
    );
    expect(tokens).toHaveLength(1);
    const mount = container.volumeMounts!.find((m) => m.name === tokens[0]!.volume)!;
    expect(env.AWS_WEB_IDENTITY_TOKEN_FILE).toBe(`${mount.mountPath}/${tokens[0]!.path}`);
    const account = checkWebIdentity(trust('ack-rrsa'), subject(objects), tokens[0]!.audience);
    expect(env.AWS_ROLE_ARN!.split(':')[4]).toBe(account);
    // The variables are the AWS SDK's, documented with the agent's (docs/node-agent.md#environment).
    const documented = readFileSync(`${root}docs/node-agent.md`, 'utf8');
    for (const name of ['AWS_ROLE_ARN', 'AWS_WEB_IDENTITY_TOKEN_FILE', 'AWS_ROLE_SESSION_NAME'])
      expect(documented, name).toMatch(
        new RegExp(`^\\| [^|\\n]*\`${name}\`[^|\\n]*\\|[^\\n]*Read by the AWS SDK`, 'm'),
      );
  });

  it('EKS Pod Identity: the role trusts EKS for the namespace and ServiceAccount the DaemonSet runs as', () => {
    const { ds, spec } = agentOf(renderOverlay([]));
    const t = trust('pod-identity');
    expect(t.Statement).toEqual([
      {
        Effect: 'Allow',
        Principal: { Service: 'pods.eks.amazonaws.com' },
        Action: ['sts:AssumeRole', 'sts:TagSession'],
        Condition: {
          StringEquals: {
            'aws:RequestTag/kubernetes-namespace': ds.metadata.namespace,
            'aws:RequestTag/kubernetes-service-account': spec.serviceAccountName,
          },
        },
      },
    ]);
  });

  it('docs/deploy.md names every component and trust policy it ships for the agents', () => {
    const doc = readFileSync(`${root}docs/deploy.md`, 'utf8');
    for (const f of [
      'infra/k8s/identity/irsa',
      'infra/k8s/identity/ack-rrsa',
      'infra/aws/node-agent/trust-irsa.json',
      'infra/aws/node-agent/trust-pod-identity.json',
      'infra/aws/node-agent/trust-ack-rrsa.json',
    ])
      expect(doc, f).toContain(f);
  });
});
