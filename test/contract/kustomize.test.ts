import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { AgentHealth, startAgentHttp } from '../../node-agent/http.ts';
import { Metrics } from '../../node-agent/metrics.ts';
import { commandWorks, requireTool } from '../tools.ts';

/**
 * infra/k8s/kustomization.yaml, rendered two ways: by reading every file it names (always), and by
 * the real `kubectl kustomize` where kubectl is installed; both must give the same objects.
 */
const root = new URL('../../', import.meta.url).pathname;
const k8s = join(root, 'infra/k8s');

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  subjects?: { kind: string; name: string; namespace?: string }[];
  roleRef?: { kind: string; name: string };
  spec?: {
    template: {
      spec: {
        serviceAccountName?: string;
        automountServiceAccountToken?: boolean;
        containers: { name: string; image: string; env?: { name: string }[] }[];
      };
    };
  };
};
type Kustomization = {
  kind: string;
  resources?: string[];
  components?: string[];
  patches?: { path: string }[];
  images?: { name: string; newName?: string; newTag?: string }[];
  configMapGenerator?: { name: string; namespace?: string; envs?: string[] }[];
};

const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);
/**
 * Namespaces gpu-reflex uses but does not create: NVIDIA's GPU Operator's (the mig-parted ConfigMap),
 * and kube-system for the opt-in ack-cgpu component (ACK's unhealthy-gpu-<node> ConfigMaps).
 */
const EXTERNAL_NAMESPACES = new Set(['gpu-operator', 'kube-system']);
const key = (o: Obj) =>
  `${o.apiVersion.split('/').slice(0, -1).join('/') || 'core'}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** The objects of a kustomization without kubectl: its resources' documents, its components' too; patches only checked to have a target. */
function render(
  dir: string,
  components: string[] = [],
): { objects: Obj[]; patches: Obj[]; images: Kustomization['images'] } {
  const k = parseYaml(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
  const objects: Obj[] = [];
  const patches: Obj[] = [];
  for (const r of k.resources ?? []) {
    expect(existsSync(join(dir, r)), `${dir}: resource ${r}`).toBe(true);
    objects.push(...parseAllDocuments(readFileSync(join(dir, r), 'utf8')).map((d) => d.toJS() as Obj));
  }
  for (const p of k.patches ?? []) patches.push(parseYaml(readFileSync(join(dir, p.path), 'utf8')) as Obj);
  for (const g of k.configMapGenerator ?? []) {
    for (const e of g.envs ?? [])
      expect(existsSync(join(dir, e)), `${dir}: configMapGenerator env file ${e}`).toBe(true);
    objects.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: g.name, ...(g.namespace ? { namespace: g.namespace } : {}) },
    });
  }
  for (const c of [...(k.components ?? []), ...components]) {
    const sub = render(join(dir, c));
    expect((parseYaml(readFileSync(join(dir, c, 'kustomization.yaml'), 'utf8')) as Kustomization).kind).toBe(
      'Component',
    );
    objects.push(...sub.objects);
    patches.push(...sub.patches);
  }
  return { objects, patches, images: k.images };
}

function checkConsistent(objects: Obj[]): void {
  const keys = objects.map(key);
  expect(
    keys.filter((k, i) => keys.indexOf(k) !== i),
    'every kind/namespace/name once',
  ).toEqual([]);
  const namespaces = new Set(objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name));
  for (const o of objects) {
    if (CLUSTER_SCOPED.has(o.kind)) expect(o.metadata.namespace, key(o)).toBeUndefined();
    else
      expect(
        namespaces.has(o.metadata.namespace!) || EXTERNAL_NAMESPACES.has(o.metadata.namespace!),
        `${key(o)}: a namespace this creates`,
      ).toBe(true);
  }
  const has = (kind: string, name: string, namespace?: string) =>
    objects.some((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === namespace);
  for (const b of objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')) {
    expect(
      has(b.roleRef!.kind, b.roleRef!.name, b.roleRef!.kind === 'Role' ? b.metadata.namespace : undefined),
      `${key(b)}: its role`,
    ).toBe(true);
    for (const s of b.subjects!.filter((s) => s.kind === 'ServiceAccount'))
      expect(has('ServiceAccount', s.name, s.namespace), `${key(b)}: ServiceAccount ${s.name}`).toBe(true);
  }
  for (const s of objects.filter(
    (o) => o.kind === 'Secret' && o.metadata.annotations?.['kubernetes.io/service-account.name'],
  )) {
    expect(
      has('ServiceAccount', s.metadata.annotations!['kubernetes.io/service-account.name']!, s.metadata.namespace),
      key(s),
    ).toBe(true);
  }
  for (const d of objects.filter((o) => o.kind === 'DaemonSet'))
    expect(has('ServiceAccount', d.spec!.template.spec.serviceAccountName!, d.metadata.namespace), key(d)).toBe(true);
}

describe('infra/k8s/kustomization.yaml (read file by file)', () => {
  const base = render(k8s);

  it('assembles the agent, the functions RBAC and their identity, each object once, in namespaces it creates', () => {
    checkConsistent(base.objects);
    expect(base.objects.map(key)).toEqual(
      expect.arrayContaining([
        'core/Namespace//gpu-reflex',
        'apps/DaemonSet/gpu-reflex/gpu-reflex-node-agent',
        'rbac.authorization.k8s.io/ClusterRole//gpu-reflex-functions',
        'core/ServiceAccount/gpu-reflex/gpu-reflex-functions',
      ]),
    );
    // The actuator's RBAC is opt-in: not in the base.
    expect(base.objects.map(key)).not.toContain(
      'rbac.authorization.k8s.io/ClusterRole//gpu-reflex-node-agent-actuator',
    );
  });

  it("binds every one of the functions' roles to their group and their ServiceAccount alike", () => {
    const bindings = base.objects.filter(
      (o) => /Binding$/.test(o.kind) && o.roleRef!.name.startsWith('gpu-reflex-functions'),
    );
    expect(bindings).toHaveLength(3);
    for (const b of bindings)
      expect(b.subjects!.map((s) => `${s.kind}/${s.name}`).sort(), key(b)).toEqual([
        'Group/gpu-reflex:functions',
        'ServiceAccount/gpu-reflex-functions',
      ]);
  });

  it('with the actuator component: its ClusterRole bound to the agent, and a patch for the DaemonSet that exists', () => {
    const withActuator = render(k8s, ['actuator']);
    checkConsistent(withActuator.objects);
    expect(withActuator.objects.map(key)).toContain(
      'rbac.authorization.k8s.io/ClusterRole//gpu-reflex-node-agent-actuator',
    );
    for (const p of withActuator.patches) expect(withActuator.objects.map(key), 'patch target').toContain(key(p));
  });

  it('the ACK cGPU card-fence RBAC is opt-in: not in the base; the component binds it to the functions', () => {
    expect(base.objects.map(key)).not.toContain(
      'rbac.authorization.k8s.io/Role/kube-system/gpu-reflex-functions-gpushare',
    );
    const withCgpu = render(k8s, ['ack-cgpu']);
    checkConsistent(withCgpu.objects);
    const binding = withCgpu.objects.find(
      (o) => key(o) === 'rbac.authorization.k8s.io/RoleBinding/kube-system/gpu-reflex-functions-gpushare',
    )!;
    expect(binding.subjects!.map((s) => `${s.kind}/${s.name}`).sort()).toEqual([
      'Group/gpu-reflex:functions',
      'ServiceAccount/gpu-reflex-functions',
    ]);
  });

  it("names the bus and region once, in agent-bus.env, matching serverless.yml's default stage and region", () => {
    const env = Object.fromEntries(
      readFileSync(join(k8s, 'agent-bus.env'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split('=') as [string, string]),
    );
    expect(env).toEqual({ EVENT_BUS_NAME: 'gpu-reflex-dev', AWS_REGION: 'us-east-1' });
    const sls = readFileSync(join(root, 'serverless.yml'), 'utf8');
    expect(sls).toContain("stage: ${opt:stage, 'dev'}");
    expect(sls).toContain("region: ${opt:region, 'us-east-1'}");
    expect(sls).toContain('busName: gpu-reflex-${sls:stage}');
    // No DaemonSet names a bus or a region of its own.
    const ds = base.objects.find((o) => o.kind === 'DaemonSet')!;
    expect(ds.spec!.template.spec.containers[0]!.env!.map((e) => e.name)).not.toEqual(
      expect.arrayContaining(['EVENT_BUS_NAME']),
    );
    expect(ds.spec!.template.spec.containers[0]!.env!.map((e) => e.name)).not.toEqual(
      expect.arrayContaining(['AWS_REGION']),
    );
  });

  it('runs the image docs/deploy.md names, set in one place', () => {
    const ds = base.objects.find((o) => o.kind === 'DaemonSet')!;
    const image = ds.spec!.template.spec.containers[0]!.image;
    expect(readFileSync(join(root, 'docs/deploy.md'), 'utf8')).toContain(image);
    expect(base.images).toEqual([{ name: image.split(':')[0], newTag: image.split(':')[1] }]);
  });
});

/**
 * Where the agent runs: the DaemonSet's required node affinity against the labels each provisioner puts
 * on a GPU node. Terms are ORed, a term's expressions ANDed; `In` needs the label with one of the
 * values, `Exists` the label (https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#node-affinity).
 */
describe("the agent's GPU nodes (node-agent.yaml's node affinity)", () => {
  type Expr = { key: string; operator: 'In' | 'Exists'; values?: string[] };
  const terms = () =>
    (
      parseAllDocuments(readFileSync(join(k8s, 'node-agent.yaml'), 'utf8'))
        .map((d) => d.toJS() as Obj)
        .find((o) => o.kind === 'DaemonSet')!.spec!.template.spec as unknown as {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: { matchExpressions: Expr[] }[] };
          };
        };
      }
    ).affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
  const runsOn = (labels: Record<string, string>) =>
    terms().some((t) =>
      t.matchExpressions.every((e) =>
        e.operator === 'Exists' ? e.key in labels : e.key in labels && e.values!.includes(labels[e.key]!),
      ),
    );

  it.each([
    ['GPU Feature Discovery (GPU Operator)', { 'nvidia.com/gpu.present': 'true' }],
    ['ACK', { 'aliyun.accelerator/nvidia_name': 'NVIDIA-A100-SXM4-80GB' }],
    ['Karpenter on EKS', { 'karpenter.k8s.aws/instance-gpu-manufacturer': 'nvidia' }],
    ['EKS Auto Mode', { 'eks.amazonaws.com/instance-gpu-manufacturer': 'nvidia' }],
  ])('runs on a GPU node labelled by %s', (_, labels) => {
    expect(runsOn({ 'kubernetes.io/os': 'linux', ...labels })).toBe(true);
  });

  it.each([
    ['a CPU node', {}],
    ['a node GFD says has no GPU', { 'nvidia.com/gpu.present': 'false' }],
    ['an EKS node with AMD GPUs (Karpenter)', { 'karpenter.k8s.aws/instance-gpu-manufacturer': 'amd' }],
  ])('not on %s', (_, labels) => {
    expect(runsOn({ 'kubernetes.io/os': 'linux', ...labels })).toBe(false);
  });
});

/**
 * The DaemonSet's probes against the agent's own HTTP server (node-agent/http.ts): a degraded agent
 * (NVML failing, the bus unreachable, events stalled) is marked not ready and keeps running: the
 * kubelet restarts a container whose liveness probe fails
 * (https://kubernetes.io/docs/concepts/configuration/liveness-readiness-startup-probes/), and no
 * degraded reason is cured by a restart.
 */
describe("the agent's probes (node-agent.yaml against node-agent/http.ts)", () => {
  type Probe = { httpGet: { path: string; port: string } };
  const container = () =>
    parseAllDocuments(readFileSync(join(k8s, 'node-agent.yaml'), 'utf8'))
      .map((d) => d.toJS() as Obj)
      .find((o) => o.kind === 'DaemonSet')!.spec!.template.spec.containers[0] as unknown as {
      readinessProbe: Probe;
      livenessProbe: Probe;
      ports: { name: string; containerPort: number }[];
    };

  it('a degraded agent fails readiness with its reason and passes liveness; a healthy one passes both', async () => {
    const c = container();
    expect(c.ports.map((p) => p.name)).toContain(c.readinessProbe.httpGet.port);
    expect(c.livenessProbe.httpGet.port).toBe(c.readinessProbe.httpGet.port);
    const health = new AgentHealth();
    const status = { lastPublishAt: null as number | null, spooledEvents: 0, busReachable: true };
    const server = await startAgentHttp({
      port: 0,
      host: '127.0.0.1',
      metrics: new Metrics(),
      health,
      publisherStatus: () => status,
      now: () => 0,
    });
    const probe = async (p: Probe) => (await fetch(`http://127.0.0.1:${server.port}${p.httpGet.path}`)).status;
    try {
      expect([await probe(c.readinessProbe), await probe(c.livenessProbe)]).toEqual([200, 200]);
      health.setNvmlHealthy(false, 'nvmlDeviceGetCount: GPU is lost');
      status.busReachable = false;
      const ready = await fetch(`http://127.0.0.1:${server.port}${c.readinessProbe.httpGet.path}`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { reasons: string[] }).reasons).toHaveLength(2);
      expect(await probe(c.livenessProbe)).toBe(200);
    } finally {
      await server.close();
    }
  });
});

const kubectl = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));

describe('infra/k8s/kustomization.yaml (kubectl kustomize)', kubectl.options, () => {
  // A generated ConfigMap is named by its content (name-<hash>); the files name it without the hash.
  const unhashed = (o: Obj): Obj =>
    o.kind === 'ConfigMap'
      ? { ...o, metadata: { ...o.metadata, name: o.metadata.name.replace(/-[a-z0-9]{10}$/, '') } }
      : o;
  const kustomize = (dir: string) =>
    parseAllDocuments(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' })).map((d) =>
      unhashed(d.toJS() as Obj),
    );

  it("gives the agents the bus and region agent-bus.env names, under the generated ConfigMap's own name", () => {
    const raw = parseAllDocuments(execFileSync('kubectl', ['kustomize', k8s], { encoding: 'utf8' })).map(
      (d) => d.toJS() as Obj & { data?: Record<string, string> },
    );
    const cm = raw.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('gpu-reflex-agent-bus-'))!;
    expect(cm.data).toEqual({ EVENT_BUS_NAME: 'gpu-reflex-dev', AWS_REGION: 'us-east-1' });
    const container = raw.find((o) => o.kind === 'DaemonSet')!.spec!.template.spec.containers[0] as unknown as {
      envFrom: { configMapRef?: { name: string } }[];
    };
    expect(container.envFrom.map((e) => e.configMapRef?.name).filter(Boolean)).toEqual([cm.metadata.name]);
  });

  it('renders the same objects as the files say', () => {
    const rendered = kustomize(k8s);
    expect(rendered.map(key).sort()).toEqual(render(k8s).objects.map(key).sort());
    checkConsistent(rendered);
  });

  it('with the actuator component, the DaemonSet mounts its token and runs the actuator', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gr-kustomize-'));
    try {
      // An overlay elsewhere names the base and the component as folders, by relative paths (kustomize refuses absolute ones).
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [${relative(dir, k8s)}]\ncomponents: [${relative(dir, join(k8s, 'actuator'))}]\n`,
      );
      const rendered = kustomize(dir);
      expect(rendered.map(key).sort()).toEqual(render(k8s, ['actuator']).objects.map(key).sort());
      const spec = rendered.find((o) => o.kind === 'DaemonSet')!.spec!.template.spec;
      expect(spec.automountServiceAccountToken).toBe(true);
      expect(spec.containers[0]!.env!.map((e) => e.name)).toEqual(
        expect.arrayContaining(['NODE_NAME', 'GPU_ACTIONS', 'FENCE_FILE']),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
