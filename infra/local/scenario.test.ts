import { describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_SCENARIO_PATH, loadScenario, parseDuration, parseScenario, ScenarioError } from './scenario.ts';

const FLEET = `
fleet:
  nodes:
    - { name: gpu, count: 2, labels: { nvidia.com/gpu.count: "2" }, allocatable: { cpu: "8", memory: 64Gi, nvidia.com/gpu: 2 } }
`;
const ok = (extra: string) => `name: t\ndurationSeconds: 10\n${FLEET}\n${extra}`;

describe('parseDuration', () => {
  it.each([
    ['8s', 8000],
    ['1.5s', 1500],
    ['500ms', 500],
    ['2m', 120_000],
    ['3h', 10_800_000],
    ['1.5h', 5_400_000],
    [3, 3000],
  ])('reads %s as %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['8', '8 sec', '-1s', 's'])('refuses %j', (text) =>
    expect(() => parseDuration(text)).toThrow(/not a duration/),
  );
});

describe('scenario validation', () => {
  it('loads the default scenario and its fleet file', () => {
    const s = loadScenario(DEFAULT_SCENARIO_PATH);
    expect(s.name).toBe('default');
    expect(s.parsedFleet.nodes.map((n) => n.name)).toContain('h100-mig');
    expect(s.timeline.some((t) => 'fault' in t && t.fault.kind === 'xid' && t.fault.xid === 79)).toBe(true);
  });

  it('reads the three step kinds by their keys, with times in ms', () => {
    const s = parseScenario(
      ok(`timeline:
  - { at: 2s, node: gpu-1, gpu: 1, fault: { kind: xid, xid: 79 } }
  - { at: 3s, pods: { name: p, namespace: default, count: 2, requests: { nvidia.com/gpu: 1 } } }
  - { at: 4s, note: hello }`),
    );
    expect(s.timeline.map((t) => t.at)).toEqual([2000, 3000, 4000]);
    expect(s.agents).toEqual({ nodes: 'all-gpu-nodes', sampleIntervalMs: 1000 });
  });

  it('reads a join step: the node, its labels and allocatable; a misspelt field is named', () => {
    const s = parseScenario(
      ok(`timeline:
  - { at: 5s, join: { node: a100-new, labels: { nvidia.com/gpu.present: "true" }, allocatable: { nvidia.com/gpu: 8 } } }`),
    );
    expect(s.timeline).toEqual([
      {
        at: 5000,
        join: { node: 'a100-new', labels: { 'nvidia.com/gpu.present': 'true' }, allocatable: { 'nvidia.com/gpu': 8 } },
      },
    ]);
    expect(() => parseScenario(ok('timeline:\n  - { at: 5s, join: { node: x, label: {} } }'))).toThrow(
      /timeline\.0\.join/,
    );
  });

  it.each([
    [
      'a fault field of the wrong type',
      'timeline:\n  - { at: 2s, node: gpu-0, gpu: 0, fault: { kind: xid, xid: "79" } }',
      /timeline\.0\.fault\.xid: .*number/,
    ],
    [
      'an unknown fault kind',
      'timeline:\n  - { at: 2s, node: gpu-0, gpu: 0, fault: { kind: melt } }',
      /timeline\.0\.fault\.kind/,
    ],
    ['a bad duration', 'timeline:\n  - { at: soon, note: x }', /timeline\.0\.at: "soon" is not a duration/],
    [
      'a node the fleet lacks',
      'timeline:\n  - { at: 2s, node: gpu-7, gpu: 0, fault: { kind: gpuLost } }',
      /timeline\.0\.node: no node "gpu-7"/,
    ],
    ['a step after the end', 'timeline:\n  - { at: 11s, note: late }', /timeline\.0\.at: 11000 ms is after the end/],
    ['an unknown agent node', 'agents: { nodes: [gpu-0, cpu-1] }', /agents\.nodes\.1: no node "cpu-1"/],
    ['an unknown top-level field', 'colour: true', /\(root\): Unrecognized key: "colour"/],
    [
      "a setting that is not a function's",
      'env: { KUBECONFIG: /etc/k }',
      /env\.KUBECONFIG: not a function setting: MIG_\*/,
    ],
    ['a file setting', 'env: { MIG_POLICY_FILE: p.yaml }', /env\.MIG_POLICY_FILE: .*comes from its own field/],
    [
      'a MIG setting out of range',
      'env: { MIG_MIN_PENDING_SECONDS: "-5" }',
      /env: bad configuration: MIG_MIN_PENDING_SECONDS: /,
    ],
    [
      'pods without requests',
      'timeline:\n  - { at: 2s, pods: { name: p, namespace: default } }',
      /timeline\.0\.pods\.requests/,
    ],
    ['a count with no bound', 'expect:\n  - { nodes: { selector: { pool: a } } }', /set atLeast, atMost or both/],
    ['a bounded count with a stray field', 'expect:\n  - { pendingPods: { resource: r, atMost: 0, x: 1 } }', /x/],
  ])('names the field for %s', (_what, extra, message) => {
    expect(() => parseScenario(ok(extra), 'test.yaml')).toThrow(message);
  });

  it('names a missing required field and the file', () => {
    expect(() => parseScenario(`name: t\n${FLEET}`, 'x.yaml')).toThrow(/x\.yaml is invalid:\n {2}durationSeconds:/);
  });

  it('reports a broken fleet under "fleet"', () => {
    expect(() =>
      parseScenario('name: t\ndurationSeconds: 5\nfleet: { nodes: [{ name: BAD, allocatable: {} }] }', 's.yaml'),
    ).toThrow(/s\.yaml: fleet: .*nodes\.0\.name/s);
  });

  it('carries a policy, inline or as a file beside it, checked as the functions will load it', () => {
    const inline = parseScenario(ok('policy:\n  pools:\n    gpu: { fenceBackend: nvidia-plugin }'), 't.yaml');
    expect(inline.policyFile?.policy.pools.gpu?.fenceBackend).toBe('nvidia-plugin');
    expect(JSON.parse(inline.policyFile!.text)).toEqual({ pools: { gpu: { fenceBackend: 'nvidia-plugin' } } });
    const fromFile = loadScenario(new URL('./scenarios/nvidia-plugin.yaml', import.meta.url).pathname);
    expect(fromFile.policyFile?.policy.pools['a100-nv']?.fenceBackend).toBe('nvidia-plugin');
    expect(() => parseScenario(ok('policy:\n  fence: { backend: magic }'), 't.yaml')).toThrow(
      /t\.yaml: policy:\n {2}t\.yaml \(policy\):\d+: fence\.backend: expected one of/,
    );
    expect(() => parseScenario(ok('policy: ./missing-policy.yaml'), 't.yaml')).toThrow(
      /t\.yaml: policy: cannot read .*missing-policy\.yaml: ENOENT/,
    );
  });

  it('takes endWhenMet only with checks to meet, and allocatable checks only with quantities', () => {
    expect(
      parseScenario(
        ok('endWhenMet: true\nexpect:\n  - { node: gpu-0, allocatable: { nvidia.com/gpu: 2, memory: 64Gi } }'),
        't.yaml',
      ).endWhenMet,
    ).toBe(true);
    expect(parseScenario(ok(''), 't.yaml').endWhenMet).toBe(false);
    expect(() => parseScenario(ok('endWhenMet: true'), 't.yaml')).toThrow(
      /t\.yaml is invalid:\n {2}endWhenMet: endWhenMet needs at least one expect check/,
    );
    expect(() =>
      parseScenario(ok('expect:\n  - { node: gpu-0, allocatable: { nvidia.com/gpu: two } }'), 't.yaml'),
    ).toThrow(/expect\.0\.allocatable\.nvidia\.com\/gpu: not a Kubernetes quantity/);
  });

  it('gives a cloud pool the fleet nodes labelled with its id, and takes an autoscale policy only with a cloud', () => {
    const fleet = `
fleet:
  nodes:
    - { name: t4, count: 2, labels: { alibabacloud.com/nodepool-id: np-t4 }, allocatable: { nvidia.com/gpu: 1 } }
`;
    const s = parseScenario(
      `name: t\ndurationSeconds: 10\n${fleet}\ncloud:\n  pools: [{ id: np-t4, name: t4, instanceTypes: [ecs.gn6i-c4g1.xlarge] }]\nautoscale:\n  pools: { np-t4: { max: 4 } }`,
      't.yaml',
    );
    expect(s.cloudFile?.pools[0]).toMatchObject({ id: 'np-t4', nodeNames: ['t4-0', 't4-1'], size: 2 });
    expect(s.autoscaleFile?.policy.pools['np-t4']).toEqual({ min: 0, max: 4, maxStep: 10 });
    expect(() => parseScenario(ok('autoscale:\n  pools: { np-t4: { max: 4 } }'), 't.yaml')).toThrow(
      't.yaml: autoscale: needs a cloud to scale (add `cloud:`)',
    );
    expect(() => parseScenario(ok('cloud:\n  pools: [{ id: t4, name: t4, instanceTypes: [x] }]'), 't.yaml')).toThrow(
      /t\.yaml: cloud: .*pools\.0\.id: must start with "np"/s,
    );
    expect(() => parseScenario(ok('cloud: {}\nautoscale:\n  pools: { np-t4: { min: 5, max: 4 } }'), 't.yaml')).toThrow(
      /t\.yaml: autoscale: .*pools\.np-t4: min must not exceed max/s,
    );
  });

  it('says when the file cannot be read', () => {
    expect(() => loadScenario('/nonexistent/scenario.yaml')).toThrow(ScenarioError);
  });
});

describe('the scenarios folder', () => {
  // Every YAML file at its top is a scenario (`gpu-reflex simulate --scenario` takes it); fleets and
  // their team files live in fleets/ (issue #31: a quota team file sat here and failed to load).
  const dir = new URL('./scenarios/', import.meta.url).pathname;
  const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
  it.each(files)('%s loads as a scenario', (f) => expect(() => loadScenario(join(dir, f))).not.toThrow());
});
