/** Lambda `label-nodes`: on each `GPU Inventory`, that node's labels follow it; see run.ts. */
import { GPU_INVENTORY, type GpuInventoryDetail } from '../../events/index.ts';
import { eventHandler } from '../lib/handler.ts';
import { labelNode } from './run.ts';
import { lazy } from '../lib/wiring.ts';
import type { LabelWiring } from './wiring.ts';

export function createLabelHandler(getDeps: () => LabelWiring | Promise<LabelWiring>) {
  return eventHandler<GpuInventoryDetail>({
    name: 'label-nodes',
    detailTypes: [GPU_INVENTORY],
    logger: async () => (await getDeps()).logger,
    async handle(event, { logger }) {
      const d = await getDeps();
      const out = await labelNode({ ...d.kube, ...d, config: d.labelerConfig, logger }, event.detail);
      const p = out.plan;
      return {
        node: p.node,
        changed: p.kind === 'relabel' ? p.changes.map((c) => `${c.key} ${c.from ?? 'unset'} → ${c.to ?? 'unset'}`) : [],
        leftAlone: p.left.map((l) => `${l.key}=${l.value ?? 'unset'} (${l.why})`),
        ...(p.kind === 'noop' ? { noop: p.reason } : {}),
      };
    },
  });
}

// The wiring (config files, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createLabelHandler(lazy(async () => (await import('./wiring.ts')).wireLabels('label-nodes')));
