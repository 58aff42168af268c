/** Test helpers for the labeler: an inventory from a few facts, and a labeler over fake ports. */
import type { GpuInventoryDetail } from '../../events/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import { DEFAULT_LABELER_CONFIG, type LabelerConfig } from './core/config.ts';
import type { LabelDeps } from './run.ts';

type Mig = GpuInventoryDetail['gpus'][number]['migMode'];

export function inventory(
  o: {
    node?: string;
    at?: string;
    driver?: string;
    cuda?: string | null;
    gpus?: (string | { name: string; mig: Mig })[];
  } = {},
): GpuInventoryDetail {
  const gpus = (o.gpus ?? Array.from({ length: 8 }, () => 'NVIDIA A100-SXM4-80GB')).map((g, i) => {
    const { name, mig } = typeof g === 'string' ? { name: g, mig: 'disabled' as Mig } : g;
    return {
      index: i,
      uuid: `GPU-00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      pciBusId: `00000000:${(16 + i).toString(16).padStart(2, '0').toUpperCase()}:00.0`,
      name,
      memoryTotalMiB: 81920,
      migMode: mig,
      migDevices: [],
      processes: [],
    };
  });
  return {
    schemaVersion: 1,
    eventId: `inventory:${o.node ?? 'gpu-1'}:${o.at ?? '0'}`,
    node: o.node ?? 'gpu-1',
    observedAt: o.at ?? '2026-01-01T00:00:00.000Z',
    driverVersion: o.driver ?? '550.54.14',
    ...(o.cuda === null ? {} : { cudaVersion: o.cuda ?? '12.4' }),
    gpus,
  };
}

export function labeler(config: LabelerConfig = DEFAULT_LABELER_CONFIG): {
  kube: FakeKube;
  publisher: RecordingPublisher;
  deps: LabelDeps;
} {
  const kube = fakeKube();
  const publisher = new RecordingPublisher();
  const deps: LabelDeps = {
    nodes: kube.nodes,
    pods: kube.pods,
    publisher,
    notifier: new RecordingNotifier(),
    clock: { now: () => Date.UTC(2026, 0, 1), sleep: async () => undefined },
    logger: silentLogger,
    config,
  };
  return { kube, publisher, deps };
}

/** The label-nodes handler over a fake cluster holding `node`: what one cloud's delivery reaches. */
export async function labelHandlerFor(node: string) {
  const { createLabelHandler } = await import('./handler.ts');
  const t = labeler();
  t.kube.cluster.addNode({ name: node });
  const handler = createLabelHandler(
    () =>
      ({
        ...t.deps,
        kube: { nodes: t.kube.nodes, pods: t.kube.pods },
        labelerConfig: DEFAULT_LABELER_CONFIG,
      }) as never,
  );
  return { t, handler };
}
