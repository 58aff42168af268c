import { describe, expect, it } from 'vitest';
import { PluginHealthCheck, type NodeView } from './plugin-health.ts';
import { draManaged, kubeNodeSlices, type SliceView } from './plugin-dra.ts';

const view = (o: Partial<NodeView> = {}): NodeView => ({ labels: {}, capacity: {}, allocatable: {}, ...o });
const inv = { gpus: Array.from({ length: 8 }, () => ({ migMode: 'disabled' as const, migDevices: [] })) };
const nvidiaDra: SliceView = { driver: 'gpu.nvidia.com', devices: 8 };

function check(node: () => NodeView, slices?: () => Promise<SliceView[]>, log?: (l: string) => void) {
  return new PluginHealthCheck({
    nodeName: 'n1',
    readNode: async () => node(),
    ...(slices ? { readSlices: slices } : {}),
    ...(log ? { log } : {}),
  });
}
const states = async (c: PluginHealthCheck, at: number) =>
  (await c.check(at, inv as never)).map((e) => `${e.detail.state}${e.detail.kind ? `:${e.detail.kind}` : ''}`);

describe('the device plugin check on a node whose GPUs a DRA driver offers', () => {
  it('sends no mismatch where no device-plugin GPU is advertised and its ResourceSlice lists GPUs', async () => {
    const c = check(
      () => view({ capacity: { cpu: '64' } }),
      async () => [nvidiaDra],
    );
    expect(await states(c, 0)).toEqual([]);
    expect(await states(c, 60_000)).toEqual([]);
    expect(await states(c, 600_000)).toEqual([]);
  });

  it('still reports a device-plugin node that is missing a GPU, slices or not', async () => {
    const short = () => view({ capacity: { 'nvidia.com/gpu': '7' }, allocatable: { 'nvidia.com/gpu': '7' } });
    let reads = 0;
    const slices = async () => (reads++, [nvidiaDra]);
    expect(await states(check(short, slices), 0)).toEqual(['firing:capacity']);
    expect(await states(check(short), 0)).toEqual(['firing:capacity']);
    expect(reads).toBe(0); // a node that advertises a plugin's GPUs is not asked for its slices
    // A dead plugin (none allocatable) beside a DRA driver for something else is still a dead plugin.
    const dead = () => view({ capacity: { 'nvidia.com/gpu': '8' }, allocatable: { 'nvidia.com/gpu': '0' } });
    expect(
      await states(
        check(dead, async () => [nvidiaDra]),
        0,
      ),
    ).toEqual(['firing:none-allocatable']);
  });

  it('reports a node with no GPU resource and no GPU DRA slice (a plugin that never started)', async () => {
    const none = () => view({ capacity: { cpu: '64' } });
    expect(
      await states(
        check(none, async () => []),
        0,
      ),
    ).toEqual(['firing:capacity']);
    // A NIC's DRA driver, or NVIDIA's ComputeDomain driver, offers no GPU.
    const other = async () => [
      { driver: 'dra.net', devices: 4 },
      { driver: 'compute-domain.nvidia.com', devices: 1 },
    ];
    expect(await states(check(none, other), 0)).toEqual(['firing:capacity']);
    expect(
      await states(
        check(none, async () => [{ driver: 'gpu.nvidia.com', devices: 0 }]),
        0,
      ),
    ).toEqual(['firing:capacity']);
  });

  it('reads unreadable slices as unknown: the mismatch stands, said once in the log', async () => {
    const lines: string[] = [];
    const c = check(
      () => view(),
      async () => {
        throw new Error('resourceslices is forbidden');
      },
      (l) => lines.push(l),
    );
    expect(await states(c, 0)).toEqual(['firing:capacity']);
    expect(await states(c, 60_000)).toEqual(['firing:capacity']);
    expect(await states(c, 120_000)).toEqual(['firing:capacity']);
    expect(lines.filter((l) => l.includes('not readable'))).toHaveLength(1);
  });

  it('resolves a mismatch it sent before the DRA driver published its slice, and reads slices once a minute', async () => {
    let slices: SliceView[] = [];
    let reads = 0;
    const c = check(
      () => view(),
      async () => {
        reads++;
        return slices;
      },
    );
    expect(await states(c, 0)).toEqual(['firing:capacity']);
    slices = [nvidiaDra];
    expect(await states(c, 5_000)).toEqual([]); // the last reading holds for a minute
    expect(await states(c, 60_000)).toEqual(['resolved']);
    expect((await c.check(61_000, inv as never)).length).toBe(0);
    expect(reads).toBe(2);
  });
});

describe('draManaged', () => {
  const res = (capacity: number) => [{ resource: 'nvidia.com/gpu', expected: 8, capacity, allocatable: capacity }];
  it.each([
    [0, [nvidiaDra], true],
    [8, [nvidiaDra], false],
    [0, [], false],
    [0, [{ driver: 'gpu.example.com', devices: 8 }], false],
  ])('capacity %s, slices %j: %s', (cap, slices, want) => {
    expect(draManaged(res(cap), slices)).toBe(want);
  });
  it('takes the drivers it is given', () => {
    expect(draManaged(res(0), [{ driver: 'gpu.example.com', devices: 8 }], ['gpu.example.com'])).toBe(true);
  });
});

describe('kubeNodeSlices', () => {
  const slice = (driver: string, nodeName: string, n: number) => ({
    spec: { driver, nodeName, devices: Array.from({ length: n }, (_, i) => ({ name: `gpu-${i}` })) },
  });
  it("lists this node's slices by field selector, at the first version served, and keeps that version", async () => {
    const asked: string[] = [];
    const custom = {
      listClusterCustomObject: async (r: {
        group: string;
        version: string;
        plural: string;
        fieldSelector?: string;
      }) => {
        asked.push(`${r.group}/${r.version} ${r.plural} ${r.fieldSelector}`);
        if (r.version !== 'v1beta1') throw Object.assign(new Error('404 page not found'), { code: 404 });
        return { items: [slice('gpu.nvidia.com', 'n1', 8), slice('gpu.nvidia.com', 'n2', 8)] };
      },
    };
    const read = kubeNodeSlices(custom as never, 'n1');
    expect(await read()).toEqual([{ driver: 'gpu.nvidia.com', devices: 8 }]);
    expect(asked).toEqual([
      'resource.k8s.io/v1 resourceslices spec.nodeName=n1',
      'resource.k8s.io/v1beta2 resourceslices spec.nodeName=n1',
      'resource.k8s.io/v1beta1 resourceslices spec.nodeName=n1',
    ]);
    await read();
    expect(asked.at(-1)).toBe('resource.k8s.io/v1beta1 resourceslices spec.nodeName=n1');
    expect(asked).toHaveLength(4);
  });

  it('throws when the list is refused or no version is served (unknown, never "not DRA" silently)', async () => {
    const forbidden = {
      listClusterCustomObject: async () => Promise.reject(Object.assign(new Error('x'), { code: 403 })),
    };
    await expect(kubeNodeSlices(forbidden as never, 'n1')()).rejects.toThrow('x');
    const none = { listClusterCustomObject: async () => Promise.reject(Object.assign(new Error('y'), { code: 404 })) };
    await expect(kubeNodeSlices(none as never, 'n1')()).rejects.toThrow(/none of v1, v1beta2, v1beta1/);
  });
});
