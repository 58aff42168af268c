import { describe, expect, it } from 'vitest';
import { commandWorks, requireTool } from '../tools.ts';
import { check, invalid, lowestLevel, type Level, type PodSpec } from './pod-security-standards.ts';
import { renderOverlay, type K8sObject } from './render-k8s.ts';

/**
 * infra/k8s under the Pod Security Standards
 * (https://kubernetes.io/docs/concepts/security/pod-security-standards/), rendered by
 * `kubectl kustomize` with each component: every rule the agent breaks is one written down here
 * with its reason (a new one fails), its namespace enforces the lowest level that admits it (a level
 * too high rejects the agent, one too low admits more than it needs), and the API server's own
 * validation would accept every container.
 */
const kubectl = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));

/** The rules the agent breaks, by the component that brings them, and why. */
const EXPLAINED: Record<string, Record<string, string>> = {
  base: {
    'baseline Host Namespaces spec.hostPID': "GPU process → pod: /proc/<pid>/cgroup of the host's processes",
    'baseline HostPath Volumes spec.volumes[kmsg]': "XIDs from the kernel's log, /dev/kmsg",
    'baseline HostPath Volumes spec.volumes[spool]': 'events queued while the bus is unreachable survive a restart',
    'baseline HostPath Volumes spec.volumes[pod-logs]': "/metrics' pod labels: the names under /var/log/pods",
    'baseline HostPath Volumes spec.volumes[pod-resources]': "the kubelet's PodResources socket: which pod holds a GPU",
    'baseline Capabilities spec.containers[agent].securityContext.capabilities.add[SYSLOG]':
      '/dev/kmsg under kernel.dmesg_restrict=1',
    'restricted Volume Types spec.volumes[kmsg]': 'the hostPath above',
    'restricted Volume Types spec.volumes[spool]': 'the hostPath above',
    'restricted Volume Types spec.volumes[pod-logs]': 'the hostPath above',
    'restricted Volume Types spec.volumes[pod-resources]': 'the hostPath above',
    'restricted Running as Non-root spec.containers[agent].securityContext':
      'UID 0: Kubernetes gives an added capability (SYSLOG) to UID 0 only',
    'restricted Running as Non-root user spec.containers[agent].securityContext.runAsUser': 'the same',
    'restricted Capabilities spec.containers[agent].securityContext.capabilities.add[SYSLOG]': 'the same SYSLOG',
  },
  actuator: {
    'baseline HostPath Volumes spec.volumes[device-plugin-config]':
      "the device plugin's unhealthy-devices file (fence)",
    'restricted Volume Types spec.volumes[device-plugin-config]': 'the hostPath above',
  },
  'actuator-reset-pause': {
    'baseline Privileged Containers spec.containers[agent].securityContext.privileged':
      "a GPU reset and persistence mode need the driver's management interface and root on the host",
    'restricted Privilege Escalation spec.containers[agent].securityContext.allowPrivilegeEscalation':
      'privileged forbids allowPrivilegeEscalation false (API validation)',
  },
  'identity/irsa': {},
  'identity/ack-rrsa': {},
  'identity/alibaba-rrsa': {},
  'ack-cgpu': {},
  monitoring: {},
};

const COMBINATIONS: string[][] = [
  [],
  ['actuator'],
  ['actuator', 'actuator-reset-pause'],
  ['identity/irsa'],
  ['identity/ack-rrsa'],
  ['identity/alibaba-rrsa'],
  ['ack-cgpu', 'monitoring'],
];
const RANK: Record<Level, number> = { privileged: 0, baseline: 1, restricted: 2 };
const podSpecs = (objects: K8sObject[]) =>
  objects.filter((o) => o.spec?.template?.spec).map((o) => ({ o, spec: o.spec!.template!.spec as unknown as PodSpec }));

describe('infra/k8s under the Pod Security Standards (kubectl kustomize)', kubectl.options, () => {
  it.each(COMBINATIONS.map((c) => [c.join(' + ') || 'the base', c] as const))(
    '%s: breaks only the rules written down with their reason, and only the agent runs',
    (_, components) => {
      const objects = renderOverlay(components);
      const pods = podSpecs(objects);
      expect(pods.map(({ o }) => `${o.kind}/${o.metadata.name}`)).toEqual(['DaemonSet/gpu-reflex-node-agent']);
      const found = check(pods[0]!.spec)
        .map((f) => `${f.level} ${f.control} ${f.where}`)
        .sort();
      const explained = ['base', ...components].flatMap((c) => Object.keys(EXPLAINED[c]!)).sort();
      expect(found).toEqual(explained);
      // What restricted asks that the agent can give, it gives (pod-level RuntimeDefault seccomp, no
      // privilege escalation but where privileged, every capability dropped): none of these is written down.
      expect(explained.filter((f) => /Seccomp|capabilities\.drop/.test(f))).toEqual([]);
    },
  );

  it.each(COMBINATIONS.map((c) => [c.join(' + ') || 'the base', c] as const))(
    "%s: each namespace enforces the lowest level that admits its pods; the API server's validation passes",
    (_, components) => {
      const objects = renderOverlay(components);
      for (const ns of objects.filter((o) => o.kind === 'Namespace')) {
        const labels = ns.metadata.labels ?? {};
        const enforced = labels['pod-security.kubernetes.io/enforce'] as Level | undefined;
        expect(enforced, `${ns.metadata.name}: pod-security.kubernetes.io/enforce`).toBeDefined();
        const inside = podSpecs(objects).filter(({ o }) => o.metadata.namespace === ns.metadata.name);
        const needed = inside
          .map(({ spec }) => lowestLevel(check(spec)))
          .reduce<Level>((a, b) => (RANK[a] <= RANK[b] ? a : b), 'restricted');
        expect(enforced, `${ns.metadata.name}: the lowest level its pods meet`).toBe(needed);
      }
      for (const { o, spec } of podSpecs(objects)) expect(invalid(spec), `${o.kind}/${o.metadata.name}`).toEqual([]);
    },
  );
});

describe('the standard as written here', () => {
  // The rules themselves, on pods whose level the standard's tables settle.
  const agentLike: PodSpec = {
    securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
    containers: [
      {
        name: 'a',
        securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
      },
    ],
    volumes: [{ name: 'p', projected: { sources: [] } }],
  };
  it.each([
    ['a restricted pod', agentLike, 'restricted'],
    ['no seccomp profile', { ...agentLike, securityContext: {} }, 'baseline'],
    ['hostNetwork', { ...agentLike, hostNetwork: true }, 'privileged'],
    ['a hostPath volume', { ...agentLike, volumes: [{ name: 'h', hostPath: { path: '/' } }] }, 'privileged'],
    [
      'NET_RAW added',
      { ...agentLike, containers: [{ name: 'a', securityContext: { capabilities: { add: ['NET_RAW'] } } }] },
      'privileged',
    ],
    [
      'CHOWN added, nothing dropped',
      { ...agentLike, containers: [{ name: 'a', securityContext: { capabilities: { add: ['CHOWN'] } } }] },
      'baseline',
    ],
  ] as const)('%s → %s', (_, pod, level) => {
    expect(lowestLevel(check(pod as PodSpec))).toBe(level);
  });

  it('refuses privileged with allowPrivilegeEscalation false, as the API server does', () => {
    expect(
      invalid({ containers: [{ name: 'a', securityContext: { privileged: true, allowPrivilegeEscalation: false } }] }),
    ).toEqual(['a: privileged with allowPrivilegeEscalation false']);
  });
});
