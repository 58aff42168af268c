/**
 * The embedded world is independent (docs/ARCHITECTURE "The embedded world is independent",
 * issue #28): the simulators import no decision code from functions/ or node-agent/, directly or
 * through another file they use. A simulator that imports the rule it should check agrees with
 * the bug; each rule is written again from the real system's documentation instead.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expand, importsOf, violations } from './sim-imports.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

/** The simulators: the world gpu-reflex runs against on the embedded stack. */
export const SIMULATORS = [
  'infra/local/kube/', // API server, scheduler, kubelet, controllers, quota, PDBs, mig-manager
  'infra/local/alicloud/', // ECS and ACK
  'infra/local/bus/', // EventBridge
  'infra/local/mock-nvml/', // the NVML library the agent loads (test/support/mock-nvml.ts, the agent's test harness over it, is not the world)
  'infra/local/node-gpus.ts', // what GPU Feature Discovery labelled and the device plugin allocated
  'infra/local/gpu-specs.ts', // node-gpus.ts: what a node's GPUs are
  'infra/local/gpu-allocation.ts', // node-gpus.ts: which GPU each pod holds
  'infra/local/mig-usage.ts', // node-gpus.ts: MIG layouts and instances in use
  'infra/local/node-files.ts', // a node's NVML scenario, kernel log and /proc
  'infra/local/node-processes.ts', // the GPU processes of a node's pods
  'infra/local/device-plugin.ts', // NVIDIA's and ACK's device plugins (issue #27 made it independent)
  'infra/local/device-plugin-node.ts', // device-plugin.ts: a plugin's node and the devices a GPU gives
  'infra/local/broken-plugin.ts', // device-plugin.ts: a plugin that stopped serving, as the kubelet shows it
  'infra/local/plugin-sharing.ts', // NVIDIA's plugin's time-slicing and MPS config, labels and health (issue #32)
  'infra/local/ack-fence-file.ts', // ACK's unhealthy-devices file, as its plugin reads it
  'infra/local/stack-cloud.ts', // ACK's nodes joining the cluster
  'infra/local/gpu-reset-scope.ts', // which boards NVML resets one GPU on (issue #27)
  'infra/local/gpu-operator.ts', // the GPU Operator's clients holding the GPUs open (issue #27)
  'infra/local/dra-slice.ts', // NVIDIA's DRA driver's ResourceSlice and DeviceClass (issue #28)
  'infra/local/pod-resources/', // the kubelet's PodResources API (issue #28)
];

/** Product modules a simulator may use: utilities that read text and decide nothing about the world. */
export const UTILITIES = new Map([
  [
    'functions/lib/yaml-text.ts',
    'parses YAML text (bounded aliases, one-line errors): a reading aid, no rule of any system',
  ],
]);

/** Known exceptions, each with the issue that removes it (none today: #27 made the device plugin stand-in independent). */
export const KNOWN_EXCEPTIONS = new Map<string, string>();

/**
 * Not simulators, but hand-overs to the product: they may import exactly these product modules.
 * mig-fleet.ts gives the simulated fleet to the MIG planner (`mig plan --fleet`) through the
 * production kube adapter's converters, as a real cluster's objects reach it.
 */
export const ADAPTERS = new Map([
  [
    'infra/local/mig-fleet.ts',
    ['functions/adapters/kube/convert.ts', 'functions/adapters/kube/model.ts', 'functions/mig/supply.ts'],
  ],
]);

export function check(root: string) {
  const files = expand(root, SIMULATORS).filter((f) => !KNOWN_EXCEPTIONS.has(f));
  const found = violations(
    root,
    files,
    new Set(UTILITIES.keys()),
    new Set([...KNOWN_EXCEPTIONS.keys(), ...ADAPTERS.keys()]),
  );
  const adapters = [...ADAPTERS].map(([file, allowed]) => ({
    file,
    beyond: importsOf(root, file)
      .map((i) => i.target)
      .filter((t): t is string => t !== undefined && /^(functions|node-agent)\//.test(t) && !allowed.includes(t)),
  }));
  return { files, found: found.map((v) => v.chain.join(' → ')), adapters: adapters.filter((a) => a.beyond.length > 0) };
}

describe('the embedded world is independent of the code it tests', () => {
  const result = check(ROOT);

  it('covers every simulator file', () => {
    expect(result.files).toEqual(
      expect.arrayContaining([
        'infra/local/kube/scheduler.ts',
        'infra/local/kube/mig-manager.ts',
        'infra/local/kube/quantity.ts',
        'infra/local/alicloud/cloud.ts',
        'infra/local/bus/router.ts',
        'infra/local/node-gpus.ts',
        'infra/local/device-plugin.ts',
        'infra/local/stack-cloud.ts',
        'infra/local/kube/dra-allocator.ts',
        'infra/local/dra-slice.ts',
        'infra/local/pod-resources/node-state.ts',
      ]),
    );
    expect(result.files.length).toBeGreaterThan(60);
  });

  it('imports nothing from functions/ or node-agent/ in any simulator, directly or through the files it uses', () => {
    expect(result.found).toEqual([]);
  });

  it('lets the hand-over to the MIG planner import only the kube adapter and the planner types', () => {
    expect(result.adapters).toEqual([]);
  });

  it('keeps each known exception only while it is one', () => {
    for (const [file, why] of KNOWN_EXCEPTIONS) {
      const product = importsOf(ROOT, file).filter(
        (i) => i.target !== undefined && /^(functions|node-agent)\//.test(i.target),
      );
      expect(
        product.length,
        `${file} no longer imports product code (${why}): remove it from KNOWN_EXCEPTIONS and add it to SIMULATORS`,
      ).toBeGreaterThan(0);
    }
  });
});

describe('the import check', () => {
  it('sees static, re-exported, type-only and dynamic imports, and follows value imports only', () => {
    const root = mkdtempSync(join(tmpdir(), 'sim-imports-'));
    try {
      mkdirSync(join(root, 'infra/local'), { recursive: true });
      mkdirSync(join(root, 'functions'), { recursive: true });
      const files: Record<string, string> = {
        'infra/local/a.ts':
          "import { b } from './b.ts';\nimport type { T } from './t.ts';\nexport * from 'yaml';\nexport const c = () => import('../../functions/lazy.ts');",
        'infra/local/b.ts': "export { rule as b } from '../../functions/rule.ts';",
        'infra/local/t.ts': "import { x } from '../../functions/behind-a-type.ts';\nexport type T = typeof x;",
        'functions/rule.ts': 'export const rule = 1;',
        'functions/lazy.ts': 'export const lazy = 1;',
        'functions/behind-a-type.ts': 'export const x = 1;',
      };
      for (const [f, text] of Object.entries(files)) writeFileSync(join(root, f), text);
      expect(importsOf(root, 'infra/local/a.ts')).toEqual([
        { from: './b.ts', target: 'infra/local/b.ts', typeOnly: false },
        { from: './t.ts', target: 'infra/local/t.ts', typeOnly: true },
        { from: 'yaml', target: undefined, typeOnly: false },
        { from: '../../functions/lazy.ts', target: 'functions/lazy.ts', typeOnly: false },
      ]);
      expect(violations(root, ['infra/local/a.ts'], new Set(), new Set()).map((v) => v.chain.join(' → '))).toEqual([
        'infra/local/a.ts → functions/lazy.ts',
        'infra/local/a.ts → infra/local/b.ts → functions/rule.ts',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
