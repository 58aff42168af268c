import { describe, expect, it } from 'vitest';
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import { MIG_INVENTORY_ANNOTATION, type MigInventory } from '../../events/index.ts';
import { planMig } from './core/planner.ts';
import { readMigFleet } from './supply.ts';

const node = (
  name: string,
  labels: Record<string, string>,
  allocatable: Record<string, string>,
  o: Partial<NodeInfo> = {},
): NodeInfo => ({
  name,
  labels: {
    'nvidia.com/mig.strategy': 'mixed',
    'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
    'nvidia.com/gpu.count': '2',
    ...labels,
  },
  annotations: {},
  taints: [],
  unschedulable: false,
  ready: true,
  allocatable,
  resourceVersion: '1',
  ...o,
});
const pod = (name: string, resources: Record<string, number>, o: Partial<PodInfo> = {}): PodInfo => ({
  namespace: 'ml',
  name,
  uid: `uid-${name}`,
  nodeName: undefined,
  phase: 'Pending',
  labels: {},
  annotations: {},
  owners: [],
  terminating: false,
  terminationGracePeriodSeconds: 30,
  extendedResources: resources,
  ...o,
});
const guessed = (n: string) =>
  `${n}: each GPU's layout is guessed from the node's MIG totals (no node agent inventory): FROM may differ ` +
  `from the GPUs`;
const layout = (f: ReturnType<typeof readMigFleet>, n = 0) =>
  f.nodes[n]!.gpus.map((g) => g.instances.map((i) => `${i.profile}${i.inUse ? '*' : ''}`).join(','));
const noInventory = (n: string) =>
  `${n}: the node agent's MIG inventory (gpu-reflex.io/mig-inventory) is missing or unreadable: none of its GPUs ` +
  `will be relaid (a relayout could never be confirmed)`;

describe('readMigFleet', () => {
  it("spreads the node's MIG capacity over its GPUs, spelling +me back from the resource name", () => {
    const f = readMigFleet(
      [
        node(
          'h',
          {},
          { 'nvidia.com/mig-3g.40gb': '2', 'nvidia.com/mig-1g.10gb': '6', 'nvidia.com/mig-1g.10gb.me': '2' },
        ),
      ],
      [],
    );
    expect(layout(f)).toEqual([
      '3g.40gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb+me',
      '3g.40gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb+me',
    ]);
    expect(f.nodes[0]!.gpus[0]!.model.name).toBe('H100-80GB');
  });

  it('spreads totals so every GPU holds a valid layout, keeping in-use instances on the GPU that holds them', () => {
    // By profile name round robin, 4g, 3g and 7g all landed on GPU 0: no GPU holds that.
    const totals = { 'nvidia.com/mig-4g.40gb': '1', 'nvidia.com/mig-3g.40gb': '1', 'nvidia.com/mig-7g.80gb': '1' };
    expect(layout(readMigFleet([node('h', {}, totals)], []))).toEqual(['7g.80gb', '3g.40gb,4g.40gb']);
    const running = [
      pod('nb-mid', { 'nvidia.com/mig-4g.40gb': 1 }, { nodeName: 'h', phase: 'Running' }),
      pod('nb-small', { 'nvidia.com/mig-3g.40gb': 1 }, { nodeName: 'h', phase: 'Running' }),
      pod('nb-big', { 'nvidia.com/mig-7g.80gb': 1 }, { nodeName: 'h', phase: 'Running' }),
    ];
    const f = readMigFleet([node('h', {}, totals)], running, new Map([['h', [['4g.40gb', '3g.40gb'], ['7g.80gb']]]]));
    expect(layout(f)).toEqual(['4g.40gb*,3g.40gb*', '7g.80gb*']);
  });

  it('reads capacity, not allocatable (a paused or fencing device plugin does not change the GPUs)', () => {
    const f = readMigFleet(
      [node('h', {}, { 'nvidia.com/mig-7g.80gb': '0' }, { capacity: { 'nvidia.com/mig-7g.80gb': '2' } })],
      [],
    );
    expect(layout(f)).toEqual(['7g.80gb', '7g.80gb']);
  });

  it('leaves out what it cannot plan on, and says why', () => {
    const f = readMigFleet(
      [
        node('whole', { 'nvidia.com/mig.strategy': 'none' }, { 'nvidia.com/gpu': '8' }),
        node('odd', { 'nvidia.com/gpu.product': 'Tesla-T4' }, { 'nvidia.com/mig-1g.5gb': '2' }),
        node('busy', { 'nvidia.com/mig.config.state': 'pending' }, { 'nvidia.com/mig-1g.10gb': '14' }),
      ],
      [],
    );
    expect(f.nodes).toEqual([]);
    expect(f.notes).toEqual([
      "odd: Tesla-T4 is not a MIG model gpu-reflex knows, and its node agent has not reported the GPU's NVML " +
        'profile table (gpu-reflex.io/mig-inventory): left out',
      'busy: mig-manager is reconfiguring it (nvidia.com/mig.config.state=pending): left out until it is done',
    ]);
  });

  it('says so for a node on the single strategy instead of skipping it silently', () => {
    const f = readMigFleet([node('one', { 'nvidia.com/mig.strategy': 'single' }, { 'nvidia.com/gpu': '14' })], []);
    expect(f.nodes).toEqual([]);
    expect(f.notes).toEqual([
      'one: nvidia.com/mig.strategy=single (every GPU one profile, sold as nvidia.com/gpu): left out; only the ' +
        'mixed strategy is relaid',
    ]);
  });

  it.each([
    ['NVIDIA-H20', 'H20-96GB', 'nvidia.com/mig-3g.48gb'],
    ['NVIDIA-A800-SXM4-80GB', 'A800-80GB', 'nvidia.com/mig-3g.40gb'],
    ['NVIDIA-H800', 'H800-80GB', 'nvidia.com/mig-3g.40gb'],
    ['NVIDIA-GH200-480GB', 'GH200-96GB', 'nvidia.com/mig-3g.48gb'],
    ['NVIDIA-GH200-144G-HBM3e', 'GH200-144GB', 'nvidia.com/mig-3g.72gb'],
    ['NVIDIA-GB200', 'GB200', 'nvidia.com/mig-3g.93gb'],
  ])('plans a %s node (the GPUs sold for ACK) from the catalog', (product, model, resource) => {
    const f = readMigFleet([node('n', { 'nvidia.com/gpu.product': product }, { [resource]: '4' })], []);
    expect(f.notes).toEqual([guessed('n'), noInventory('n')]);
    expect(f.nodes[0]!.gpus[0]!.model.name).toBe(model);
    expect(layout(f)).toHaveLength(2);
  });

  it("relays a model the catalog lacks from its agent's NVML profile table", () => {
    const place = (size: number, starts: number[]) => starts.map((start) => ({ start, size }));
    const table = [
      { name: '1g.30gb', id: 19, sliceCount: 1, instanceCount: 7, placements: place(1, [0, 1, 2, 3, 4, 5, 6]) },
      { name: '3g.120gb', id: 9, sliceCount: 3, instanceCount: 2, placements: place(4, [0, 4]) },
      { name: '7g.240gb', id: 0, sliceCount: 7, instanceCount: 1, placements: place(8, [0]) },
    ];
    const inv: MigInventory = {
      v: 1,
      at: '2026-11-21T03:00:00.000Z',
      gpus: [
        {
          index: 0,
          uuid: 'GPU-00000000-0000-4000-8000-000000000000',
          instances: [{ profile: '7g.240gb', gi: 0, start: 0, size: 8, inUse: false }],
          profiles: table,
        },
      ],
    };
    const f = readMigFleet(
      [
        node(
          'new',
          { 'nvidia.com/gpu.product': 'NVIDIA-X300', 'nvidia.com/gpu.count': '1' },
          { 'nvidia.com/mig-7g.240gb': '1' },
          { annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inv) } },
        ),
      ],
      [],
    );
    expect(f.notes).toEqual([
      "new: NVIDIA-X300 is not in the built-in catalog: planned from its agent's NVML profile table",
    ]);
    const m = f.nodes[0]!.gpus[0]!.model;
    expect([m.name, m.memorySlices, m.computeSlices]).toEqual(['NVIDIA-X300', 8, 7]);
    expect(m.profiles.map((p) => `${p.name}:${p.starts.join('/')}:${p.max}`)).toEqual([
      '1g.30gb:0/1/2/3/4/5/6:7',
      '3g.120gb:0/4:2',
      '7g.240gb:0:1',
    ]);
  });

  it('marks the instances in use per GPU when it knows them', () => {
    const f = readMigFleet(
      [node('h', {}, { 'nvidia.com/mig-1g.10gb': '14' })],
      [pod('nb', { 'nvidia.com/mig-1g.10gb': 1 }, { nodeName: 'h', phase: 'Running' })],
      new Map([['h', [[], ['1g.10gb']]]]),
    );
    expect(f.nodes[0]!.gpus.map((g) => g.instances.filter((i) => i.inUse).length)).toEqual([0, 1]);
    expect(f.nodes[0]!.gpus.some((g) => g.locked)).toBe(false);
    expect(f.notes).toEqual([guessed('h')]);
  });

  it("takes each GPU's layout where the caller knows it (a fleet file's GPUs), and says when it guessed", () => {
    const totals = { 'nvidia.com/mig-3g.40gb': '2', 'nvidia.com/mig-1g.10gb': '4' };
    const exact = readMigFleet(
      [node('h', {}, totals)],
      [],
      undefined,
      undefined,
      new Map([
        [
          'h',
          [
            ['1g.10gb', '1g.10gb', '1g.10gb', '1g.10gb'],
            ['3g.40gb', '3g.40gb'],
          ],
        ],
      ]),
    );
    expect(layout(exact)).toEqual(['1g.10gb,1g.10gb,1g.10gb,1g.10gb', '3g.40gb,3g.40gb']);
    expect(exact.notes).toEqual([]);
    const guess = readMigFleet([node('h', {}, totals)], []);
    expect(layout(guess)).not.toEqual(layout(exact));
    expect(guess.notes).toEqual([guessed('h'), noInventory('h')]);
  });

  it("without knowing which GPU holds a pod, counts its instances and locks the node's GPUs, saying so", () => {
    const running = [
      pod('nb', { 'nvidia.com/mig-1g.10gb': 2 }, { nodeName: 'h', phase: 'Running' }),
      pod('done', { 'nvidia.com/mig-1g.10gb': 5 }, { nodeName: 'h', phase: 'Succeeded' }),
    ];
    const f = readMigFleet([node('h', {}, { 'nvidia.com/mig-1g.10gb': '14' })], running);
    expect(f.nodes[0]!.gpus.flatMap((g) => g.instances).filter((i) => i.inUse)).toHaveLength(2);
    expect(f.nodes[0]!.gpus.every((g) => g.locked?.includes('which GPUs they use is unknown'))).toBe(true);
    expect(f.notes).toEqual([
      guessed('h'),
      "h: 1 pod(s) use MIG instances there, but not which GPUs: none of its GPUs will be relaid (the node agent's inventory tells)",
    ]);
  });

  it('takes the pending pods that ask for MIG instances, with priority and nodeSelector', () => {
    const f = readMigFleet(
      [],
      [
        pod(
          'big',
          { 'nvidia.com/mig-3g.40gb': 1, 'nvidia.com/mig-1g.10gb.me': 1 },
          { priority: 1000, nodeSelector: { pool: 'h100' } },
        ),
        pod('cpu-only', {}),
        pod('whole', { 'nvidia.com/gpu': 1 }),
        pod('bound', { 'nvidia.com/mig-3g.40gb': 1 }, { nodeName: 'x', phase: 'Running' }),
      ],
    );
    expect(f.pending).toEqual([
      {
        namespace: 'ml',
        name: 'big',
        priority: 1000,
        requests: { '3g.40gb': 1, '1g.10gb+me': 1 },
        nodeSelector: { pool: 'h100' },
      },
    ]);
  });

  it("takes exact layouts and usage from the node agent's MIG inventory, checked against the pods bound there", () => {
    const inv: MigInventory = {
      v: 1,
      at: '2026-11-21T03:00:00.000Z',
      gpus: [
        {
          index: 0,
          uuid: 'GPU-00000000-0000-4000-8000-000000000000',
          instances: [
            { profile: '4g.40gb', gi: 1, start: 0, size: 4, inUse: true },
            { profile: '3g.40gb', gi: 2, start: 4, size: 4, inUse: false },
          ],
        },
        {
          index: 1,
          uuid: 'GPU-11111111-0000-4000-8000-000000000000',
          instances: [{ profile: '7g.80gb', gi: 0, start: 0, size: 8, inUse: false }],
        },
      ],
    };
    const n = node(
      'h',
      {},
      { 'nvidia.com/mig-4g.40gb': '1', 'nvidia.com/mig-3g.40gb': '1', 'nvidia.com/mig-7g.80gb': '1' },
      { annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inv) } },
    );
    const one = [pod('train', { 'nvidia.com/mig-4g.40gb': 1 }, { nodeName: 'h', phase: 'Running' })];
    const f = readMigFleet([n], one);
    expect(layout(f)).toEqual(['4g.40gb*,3g.40gb', '7g.80gb']);
    expect(f.nodes[0]!.gpus.some((g) => g.locked)).toBe(false);
    expect(f.notes).toEqual([]);
    // A pod started since the agent last wrote it: the inventory is behind, nothing is relaid.
    const stale = readMigFleet(
      [n],
      [...one, pod('new', { 'nvidia.com/mig-7g.80gb': 1 }, { nodeName: 'h', phase: 'Running' })],
    );
    expect(stale.nodes[0]!.gpus.every((g) => g.locked)).toBe(true);
    expect(stale.notes).toEqual([
      "h: the node agent's MIG inventory (2026-11-21T03:00:00.000Z) shows fewer instances in use than its pods hold (7g.80gb: 0 < 1): none of its GPUs will be relaid until it catches up",
    ]);
    const broken = readMigFleet([{ ...n, annotations: { [MIG_INVENTORY_ANNOTATION]: 'nope' } }], one);
    expect(broken.notes[0]).toBe(`h: ${MIG_INVENTORY_ANNOTATION} is not JSON: read as unknown`);
    expect(broken.nodes[0]!.gpus.every((g) => g.locked)).toBe(true);
  });

  it('never relays the GPUs of a node whose agent stopped confirming its inventory, and says why', () => {
    // Two idle 7g.80gb GPUs, as the agent last read them at 03:00 and confirmed until 03:05; then it died (its pod
    // gone, NVML wedged): the annotation stays on the Node, and what the GPUs hold now is unknown.
    const inv: MigInventory = {
      v: 1,
      at: '2026-11-21T03:00:00.000Z',
      checked: '2026-11-21T03:05:00.000Z',
      gpus: [0, 1].map((index) => ({
        index,
        uuid: `GPU-${index}${index}${index}${index}${index}${index}${index}${index}-0000-4000-8000-000000000000`,
        instances: [{ profile: '7g.80gb', gi: 0, start: 0, size: 8, inUse: false }],
      })),
    };
    const n = node(
      'h',
      {},
      { 'nvidia.com/mig-7g.80gb': '2' },
      {
        annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inv) },
      },
    );
    const waiting = pod('small', { 'nvidia.com/mig-3g.40gb': 1 }, { createdAt: '2026-11-21T02:00:00.000Z' });
    const at = (iso: string) => ({ now: new Date(iso), seconds: 60 });
    // Confirmed within MIG_INVENTORY_STALE_MS: planned on as before, a GPU relaid for the pod.
    const fresh = readMigFleet([n], [waiting], undefined, at('2026-11-21T03:14:00.000Z'));
    expect(fresh.nodes[0]!.gpus.some((g) => g.locked)).toBe(false);
    expect(planMig(fresh.nodes, fresh.pending).changes).toHaveLength(1);
    // Past it: every GPU locked, nothing relaid, and the node says why.
    const stale = readMigFleet([n], [waiting], undefined, at('2026-11-21T03:16:00.000Z'));
    expect(
      stale.nodes[0]!.gpus.every((g) => g.locked?.includes('last confirmed its MIG inventory at 2026-11-21T03:05')),
    ).toBe(true);
    expect(planMig(stale.nodes, stale.pending).changes).toEqual([]);
    expect(stale.notes).toContainEqual(expect.stringMatching(/^h: the node agent last confirmed .*: none of its GPUs/));
    // An older agent's inventory (no `checked`) cannot be dated: planned on as before (functions are upgraded
    // before agents), and said, never trusted silently.
    const { checked: _c, ...unstamped } = inv;
    const old = node(
      'h',
      {},
      { 'nvidia.com/mig-7g.80gb': '2' },
      {
        annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(unstamped) },
      },
    );
    const older = readMigFleet([old], [waiting], undefined, at('2026-11-21T09:00:00.000Z'));
    expect(planMig(older.nodes, older.pending).changes).toHaveLength(1);
    expect(older.notes).toContainEqual(expect.stringMatching(/^h: its MIG inventory carries no confirmation time/));
  });

  it("never relays a MIG GPU the agent lists with no instance (a reset emptied it; its repair re-applies the node's config)", () => {
    const inv: MigInventory = {
      v: 1,
      at: '2026-11-21T03:00:00.000Z',
      gpus: [
        { index: 0, uuid: 'GPU-00000000-0000-4000-8000-000000000000', instances: [] },
        {
          index: 1,
          uuid: 'GPU-11111111-0000-4000-8000-000000000000',
          instances: [{ profile: '7g.80gb', gi: 0, start: 0, size: 8, inUse: false }],
        },
      ],
    };
    const n = node(
      'h',
      {},
      { 'nvidia.com/mig-7g.80gb': '2' },
      { annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inv) } },
    );
    const f = readMigFleet([n], []);
    expect(f.nodes[0]!.gpus.map((g) => g.locked !== undefined)).toEqual([true, false]);
    expect(f.notes).toEqual([
      "h: GPU 0 is in MIG mode with no instance (a reset destroyed them; its repair has mig-manager apply the node's config again): not relaid",
    ]);
  });

  it('never relays a GPU with no instance whose MIG mode the agent could not read, and says so', () => {
    const why = 'NVML did not say whether it is in MIG mode (nvmlDeviceGetMigMode: NVML_ERROR_UNKNOWN)';
    const inv: MigInventory = {
      v: 1,
      at: '2026-11-21T03:00:00.000Z',
      gpus: [{ index: 0, uuid: 'GPU-00000000-0000-4000-8000-000000000000', instances: [], migModeUnknown: why }],
    };
    const n = node(
      'h',
      {},
      { 'nvidia.com/mig-7g.80gb': '1' },
      { annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inv) } },
    );
    const f = readMigFleet([n], []);
    expect(f.nodes[0]!.gpus.map((g) => g.locked !== undefined)).toEqual([true]);
    expect(f.notes).toEqual([
      `h: GPU 0 has no MIG instance listed and the node agent cannot read its MIG state (${why}): not relaid`,
    ]);
  });

  it('never relays a GPU whose processes the agent could not list, and counts none of its instances as placing a pod', () => {
    // nvmlDeviceGetComputeRunningProcesses_v3 answered NOT_SUPPORTED (or failed): which of its instances
    // processes run in is unknown, a process outside Kubernetes included. Read as in use (whatever the agent
    // wrote), never relaid, and the node says why.
    const why = 'NVML cannot list its compute processes (nvmlDeviceGetComputeRunningProcesses_v3: NOT_SUPPORTED)';
    const inv = (inUse: boolean) =>
      JSON.stringify({
        v: 1,
        at: '2026-11-21T03:00:00.000Z',
        gpus: [
          {
            index: 0,
            uuid: 'GPU-00000000-0000-4000-8000-000000000000',
            instances: [{ profile: '7g.80gb', gi: 0, start: 0, size: 8, inUse }],
            inUseUnknown: why,
          },
          {
            index: 1,
            uuid: 'GPU-11111111-0000-4000-8000-000000000000',
            instances: [{ profile: '7g.80gb', gi: 0, start: 0, size: 8, inUse: false }],
          },
        ],
      });
    const n = (inUse: boolean) =>
      node('h', {}, { 'nvidia.com/mig-7g.80gb': '2' }, { annotations: { [MIG_INVENTORY_ANNOTATION]: inv(inUse) } });
    for (const inUse of [true, false]) {
      const f = readMigFleet([n(inUse)], []);
      expect(layout(f)).toEqual(['7g.80gb*', '7g.80gb']);
      expect(f.nodes[0]!.gpus.map((g) => g.locked !== undefined)).toEqual([true, false]);
      expect(f.notes).toEqual([
        `h: GPU 0: the node agent cannot tell which of its instances processes run in (${why}): read as in use, ` +
          'not relaid',
      ]);
    }
    // What the planner does with it: a pod waiting on 3g.40gb gets GPU 1 relaid, never GPU 0 (before, the agent
    // wrote GPU 0's instance idle, and the fewest-GPU plan could pick it and destroy whatever ran there).
    const waiting = pod('small', { 'nvidia.com/mig-3g.40gb': 1 });
    const plan = planMig(readMigFleet([n(false)], [waiting]).nodes, readMigFleet([n(false)], [waiting]).pending);
    expect(plan.changes.map((c) => c.gpu)).toEqual([1]);
    // A running pod the agent names nowhere may be on GPU 1 (its process not started yet) as well as on GPU 0:
    // GPU 0's instance read in use is no evidence that it is there, so no GPU of the node is relaid.
    const running = pod('train', { 'nvidia.com/mig-7g.80gb': 1 }, { nodeName: 'h', phase: 'Running' });
    const f = readMigFleet([n(true)], [running]);
    expect(f.nodes[0]!.gpus.every((g) => g.locked)).toBe(true);
    expect(f.notes.at(-1)).toMatch(/GPU 0 not counted: which of its instances processes run in is unknown/);
  });

  it('names the pods holding a GPU only where its profiles in use are on no other GPU and the pods hold exactly that many', () => {
    const running = (name: string, profile: string, o: Partial<PodInfo> = {}) =>
      pod(name, { [`nvidia.com/mig-${profile}`]: 1 }, { nodeName: 'h', phase: 'Running', priority: 0, ...o });
    const uuid = (i: number) => `GPU-${String(i).repeat(8)}-0000-4000-8000-000000000000`;
    const inventory = (gpus: [string, boolean][][]) =>
      JSON.stringify({
        v: 1,
        at: '2026-11-21T03:00:00.000Z',
        gpus: gpus.map((is, index) => ({
          index,
          uuid: uuid(index),
          instances: is.map(([profile, inUse], gi) => ({ profile, gi, inUse })),
        })),
      } satisfies MigInventory);
    const at = (gpus: [string, boolean][][]) =>
      node(
        'h',
        { 'nvidia.com/gpu.count': String(gpus.length) },
        { 'nvidia.com/mig-1g.10gb': '1' },
        { annotations: { [MIG_INVENTORY_ANNOTATION]: inventory(gpus) } },
      );
    const layout3: [string, boolean][][] = [
      [
        ['4g.40gb', true],
        ['3g.40gb', true],
      ],
      [['7g.80gb', true]],
      [
        ['1g.10gb', true],
        ['1g.10gb', false],
      ],
      [['7g.80gb', false]],
    ];
    const pods = [
      running('a', '4g.40gb'),
      running('b', '3g.40gb', { priorityClassName: 'notebooks', priority: 5 }),
      running('c', '7g.80gb'),
      running('d', '1g.10gb'),
    ];
    const f = readMigFleet([at(layout3)], pods);
    const holders = f.nodes[0]!.gpus.map((g) =>
      g.holders?.map((h) => `${h.name}@${h.priority}${h.priorityClassName ? `/${h.priorityClassName}` : ''}`),
    );
    expect(holders).toEqual([['a@0', 'b@5/notebooks'], ['c@0'], ['d@0'], undefined]);
    expect(f.nodes[0]!.gpus[0]!.holders![0]!.uid).toBe('uid-a');
    // 1g.10gb in use on two GPUs: which of the two pods sits where is not known.
    const twice = readMigFleet(
      [at([layout3[0]!, [['7g.80gb', false]], [['1g.10gb', true]], [['1g.10gb', true]]])],
      [...pods.filter((p) => p.name !== 'c'), running('e', '1g.10gb')],
    );
    expect(twice.nodes[0]!.gpus.map((g) => g.holders?.length)).toEqual([2, undefined, undefined, undefined]);
    // More in use than the pods hold (a process outside Kubernetes, or a pod gone meanwhile): unknown.
    const extra = readMigFleet(
      [at(layout3)],
      pods.filter((p) => p.name !== 'c'),
    );
    expect(extra.nodes[0]!.gpus[1]!.holders).toBeUndefined();
  });

  it('names no holders where an instance in use also runs a process whose pod the agent could not tell', () => {
    // Preempting the named pod would leave the other process in the instance, and mig-manager's relayout would fail
    // on it (NVML_ERROR_IN_USE) after the pod was evicted for nothing.
    const inv = (unnamed?: true) =>
      JSON.stringify({
        v: 1,
        at: '2026-11-21T03:00:00.000Z',
        gpus: [
          {
            index: 0,
            uuid: 'GPU-00000000-0000-4000-8000-000000000000',
            instances: [
              {
                profile: '7g.80gb',
                gi: 0,
                start: 0,
                size: 8,
                inUse: true,
                pods: ['uid-train'],
                ...(unnamed ? { unnamed } : {}),
              },
            ],
          },
        ],
      });
    const n = (unnamed?: true) =>
      node(
        'h',
        { 'nvidia.com/gpu.count': '1' },
        { 'nvidia.com/mig-7g.80gb': '1' },
        { annotations: { [MIG_INVENTORY_ANNOTATION]: inv(unnamed) } },
      );
    const running = [pod('train', { 'nvidia.com/mig-7g.80gb': 1 }, { nodeName: 'h', phase: 'Running', priority: 0 })];
    expect(readMigFleet([n()], running).nodes[0]!.gpus[0]!.holders?.map((h) => h.name)).toEqual(['train']);
    const shared = readMigFleet([n(true)], running);
    expect(shared.notes).toEqual([]);
    expect(shared.nodes[0]!.gpus[0]!.locked).toBeUndefined();
    expect(shared.nodes[0]!.gpus[0]!.holders).toBeUndefined();
  });

  it('names the holders exactly where the agent names the pod in each instance in use, shared profiles too', () => {
    const running = (name: string) =>
      pod(name, { 'nvidia.com/mig-1g.10gb': 1 }, { nodeName: 'h', phase: 'Running', priority: 0 });
    const uuid = (i: number) => `GPU-${String(i).repeat(8)}-0000-4000-8000-000000000000`;
    const inv = (pods: (string[] | undefined)[]): MigInventory => ({
      v: 1,
      at: '2026-11-21T03:00:00.000Z',
      gpus: pods.map((p, index) => ({
        index,
        uuid: uuid(index),
        instances: [
          { profile: '1g.10gb', gi: 9, inUse: true, ...(p ? { pods: p } : {}) },
          { profile: '1g.10gb', gi: 10, inUse: false },
        ],
      })),
    });
    const at = (i: MigInventory) =>
      node(
        'h',
        {},
        { 'nvidia.com/mig-1g.10gb': '4' },
        { annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(i) } },
      );
    // 1g.10gb in use on both GPUs: the API alone cannot tell which pod is where; the agent can.
    const f = readMigFleet([at(inv([['uid-n0'], ['uid-n1']]))], [running('n0'), running('n1')]);
    expect(f.nodes[0]!.gpus.map((g) => g.holders?.map((h) => h.name))).toEqual([['n0'], ['n1']]);
    // The agent names a pod on one GPU only: that GPU is exact, the other stays unknown.
    const half = readMigFleet([at(inv([['uid-n0'], undefined]))], [running('n0'), running('n1')]);
    expect(half.nodes[0]!.gpus.map((g) => g.holders?.map((h) => h.name))).toEqual([['n0'], undefined]);
    // A pod the agent names that the API does not list (gone meanwhile): not exact.
    const gone = readMigFleet([at(inv([['uid-gone'], ['uid-n1']]))], [running('n1')]);
    expect(gone.nodes[0]!.gpus[0]!.holders).toBeUndefined();
  });
});
