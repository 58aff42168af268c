/**
 * infra/k8s/actuator/admission-policy.yaml, evaluated: every CEL expression parses, and the policy
 * admits and refuses what its comments say, run as the API server runs a ValidatingAdmissionPolicy
 * (https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/): the
 * matchConditions first (all true, or the policy does not apply), then the variables in order, then
 * every validation; a validation that is false denies with its message (or messageExpression), one
 * that errors denies under failurePolicy Fail. The interpreter is a CEL implementation
 * (@marcbachmann/cel-js), not the API server's cel-go: it checks what the expressions mean, the
 * render by `kubectl kustomize` checks the objects' shape.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { evaluate, parse } from '@marcbachmann/cel-js';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { commandWorks, requireTool } from '../tools.ts';

const root = new URL('../../', import.meta.url).pathname;
const k8s = join(root, 'infra/k8s');

type Policy = {
  kind: string;
  metadata: { name: string };
  spec: {
    failurePolicy: string;
    matchConstraints: { resourceRules: { apiGroups: string[]; operations: string[]; resources: string[] }[] };
    matchConditions: { name: string; expression: string }[];
    variables: { name: string; expression: string }[];
    validations: { expression: string; message?: string; messageExpression?: string }[];
    policyName?: string;
    validationActions?: string[];
  };
};
const docs = () =>
  parseAllDocuments(readFileSync(join(k8s, 'actuator/admission-policy.yaml'), 'utf8')).map((d) => d.toJS() as Policy);
const policy = () => docs().find((d) => d.kind === 'ValidatingAdmissionPolicy')!;

type Node = { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> } } & {
  spec: Record<string, unknown>;
};
interface Request {
  username: string;
  extra?: Record<string, string[]>;
  oldObject: Node;
  object: Node;
}

/** The policy's verdict on one UPDATE of a Node: not applied (matchConditions false), admitted, or denied with messages. */
function admission(p: Policy, r: Request): { applies: boolean; denied: string[] } {
  const request = { userInfo: { username: r.username, extra: r.extra ?? {} } };
  const base = { request, object: r.object, oldObject: r.oldObject };
  if (!p.spec.matchConditions.every((m) => evaluate(m.expression, base) === true))
    return { applies: false, denied: [] };
  const variables: Record<string, unknown> = {};
  for (const v of p.spec.variables) variables[v.name] = evaluate(v.expression, { ...base, variables });
  const ctx = { ...base, variables };
  const denied: string[] = [];
  for (const v of p.spec.validations) {
    let ok: boolean;
    try {
      ok = evaluate(v.expression, ctx) === true;
    } catch {
      ok = false; // an error under failurePolicy: Fail denies
    }
    if (ok) continue;
    let message = v.message ?? v.expression;
    try {
      if (v.messageExpression) message = String(evaluate(v.messageExpression, ctx));
    } catch {
      // Kubernetes falls back to `message` when messageExpression fails.
    }
    denied.push(message);
  }
  return { applies: true, denied };
}

const AGENT = 'system:serviceaccount:gpu-reflex:gpu-reflex-node-agent';
const bound = (node: string) => ({ 'authentication.kubernetes.io/node-name': [node] });
const node = (name: string, labels: Record<string, string> = {}, spec: Record<string, unknown> = {}): Node => ({
  metadata: {
    name,
    labels: { 'kubernetes.io/hostname': name, 'nvidia.com/gpu.present': 'true', ...labels },
    annotations: {},
  },
  spec: { providerID: `aws:///us-east-1a/i-${name}`, ...spec },
});
/** The Node after a merge patch of its annotations (what the actuator writes). */
const annotated = (n: Node): Node => ({
  ...n,
  metadata: { ...n.metadata, annotations: { 'gpu-reflex.io/gpu-action-results': '{"v":1}' } },
});

describe('the actuator’s admission policy (infra/k8s/actuator/admission-policy.yaml)', () => {
  it('parses every CEL expression it holds', () => {
    const p = policy();
    const exprs = [
      ...p.spec.matchConditions.map((m) => m.expression),
      ...p.spec.variables.map((v) => v.expression),
      ...p.spec.validations.flatMap((v) => [v.expression, ...(v.messageExpression ? [v.messageExpression] : [])]),
    ];
    expect(exprs.length).toBeGreaterThan(5);
    for (const e of exprs) expect(() => parse(e), e).not.toThrow();
  });

  it('applies to node UPDATEs (a PATCH is one) by the agent’s ServiceAccount, fails closed, and is bound to deny', () => {
    const p = policy();
    expect(p.spec.failurePolicy).toBe('Fail');
    expect(p.spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] },
    ]);
    const binding = docs().find((d) => d.kind === 'ValidatingAdmissionPolicyBinding')!;
    expect(binding.spec).toEqual({ policyName: p.metadata.name, validationActions: ['Deny'] });
    // The username it matches is the ServiceAccount the DaemonSet runs as.
    const objs = parseAllDocuments(readFileSync(join(k8s, 'node-agent.yaml'), 'utf8')).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string } },
    );
    const sa = objs.find((o) => o.kind === 'ServiceAccount')!;
    expect(`system:serviceaccount:${sa.metadata.namespace}:${sa.metadata.name}`).toBe(AGENT);
  });

  it('admits the agent annotating its own Node', () => {
    const n = node('gpu-a');
    expect(admission(policy(), { username: AGENT, extra: bound('gpu-a'), oldObject: n, object: annotated(n) })).toEqual(
      { applies: true, denied: [] },
    );
  });

  it('refuses the agent changing another node, naming both', () => {
    const n = node('gpu-b');
    const r = admission(policy(), { username: AGENT, extra: bound('gpu-a'), oldObject: n, object: annotated(n) });
    expect(r.denied).toEqual(['the gpu-reflex node agent on gpu-a may change its own Node only, not gpu-b']);
  });

  it('refuses a token that names no node (an older cluster, a token not from its pod): fail closed', () => {
    const n = node('gpu-a');
    const r = admission(policy(), { username: AGENT, oldObject: n, object: annotated(n) });
    expect(r.denied[0]).toMatch(/names no node/);
    expect(r.denied).toHaveLength(2); // and the own-node check errors: denied too
  });

  it('refuses the agent cordoning or tainting even its own Node', () => {
    const n = node('gpu-a');
    for (const spec of [{ unschedulable: true }, { taints: [{ key: 'x', effect: 'NoSchedule' }] }]) {
      const r = admission(policy(), {
        username: AGENT,
        extra: bound('gpu-a'),
        oldObject: n,
        object: { ...n, spec: { ...n.spec, ...spec } },
      });
      expect(r.denied).toEqual(["the gpu-reflex node agent may not change a Node's spec (taints, unschedulable)"]);
    }
  });

  it.each([
    ['sets a GPU Operator deploy label (reset pause)', true, { 'nvidia.com/gpu.deploy.dcgm-exporter': 'false' }, {}],
    // The merge patch's null removes it: gone from the Node after.
    ['restores one', true, {}, { 'nvidia.com/gpu.deploy.dcgm-exporter': 'false' }],
    ['adds any other label', false, { 'gpu-reflex.io/state': 'healthy' }, {}],
    ['changes a label it does not own', false, { 'nvidia.com/gpu.present': 'false' }, {}],
    ['removes one', false, {}, { 'topology.kubernetes.io/zone': 'us-east-1a' }],
  ] as const)('labels: the agent %s → admitted: %s', (_, admitted, added, before) => {
    const old = node('gpu-a', before);
    const labels = { ...node('gpu-a').metadata.labels, ...added };
    const r = admission(policy(), {
      username: AGENT,
      extra: bound('gpu-a'),
      oldObject: old,
      object: { ...old, metadata: { ...old.metadata, labels } },
    });
    expect(r.denied.length === 0).toBe(admitted);
  });

  it('leaves every other caller alone (the functions, the kubelet, a person)', () => {
    const n = node('gpu-b');
    for (const username of ['system:serviceaccount:gpu-reflex:gpu-reflex-functions', 'system:node:gpu-b', 'alice'])
      expect(admission(policy(), { username, oldObject: n, object: { ...n, spec: { unschedulable: true } } })).toEqual({
        applies: false,
        denied: [],
      });
  });
});

const kubectl = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));

describe('the actuator and runtime-class components (kubectl kustomize)', kubectl.options, () => {
  const render = (components: string[]) => {
    const dir = mkdtempSync(join(tmpdir(), 'gr-components-'));
    try {
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n' +
          `resources: [${relative(dir, k8s)}]\ncomponents: [${components.map((c) => relative(dir, join(k8s, c))).join(', ')}]\n`,
      );
      return parseAllDocuments(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' })).map(
        (d) => d.toJS() as { kind: string; spec?: { template?: { spec: { runtimeClassName?: string } } } },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const ds = (objs: ReturnType<typeof render>) => objs.find((o) => o.kind === 'DaemonSet')!.spec!.template!.spec;

  it('renders the actuator with its admission policy and binding', () => {
    const kinds = render(['actuator']).map((o) => o.kind);
    expect(kinds).toEqual(expect.arrayContaining(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']));
  });

  it('runtime-class sets the GPU Operator’s RuntimeClass; without it the DaemonSet names none', () => {
    expect(ds(render(['runtime-class'])).runtimeClassName).toBe('nvidia');
    expect(ds(render(['actuator', 'runtime-class'])).runtimeClassName).toBe('nvidia');
    expect(ds(render(['actuator'])).runtimeClassName).toBeUndefined();
  });
});
