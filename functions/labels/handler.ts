/** Lambda `label-nodes`: on each `GPU Inventory`, that node's labels follow it; see run.ts. */
import { GPU_INVENTORY, type GpuInventoryDetail } from '../../events/index.ts';
import { eventHandler } from '../lib/handler.ts';
import { labelNode } from './run.ts';
import { lazyLabelWiring, type LabelWiring } from './wiring.ts';

export function createLabelHandler(getDeps: () => LabelWiring) {
  return eventHandler<GpuInventoryDetail>({
    name: 'label-nodes',
    detailTypes: [GPU_INVENTORY],
    logger: () => getDeps().logger,
    async handle(event, { logger }) {
      const d = getDeps();
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

export const handler = createLabelHandler(lazyLabelWiring('label-nodes'));
