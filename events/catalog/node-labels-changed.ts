/** `Node Labels Changed` — label-nodes changed a GPU node's labels (example: ./node-labels-changed.example.json). */
import * as z from 'zod';
import { actorBase, NodeName, Timestamp } from '../common.ts';

export const NODE_LABELS_CHANGED = 'Node Labels Changed';

const LabelKey = z.string().min(1).max(317);
const LabelValue = z.string().max(63);

export const NodeLabelsChangedDetailSchema = z
  .object({
    ...actorBase,
    node: NodeName,
    /** The inventory the labels now follow (its `observedAt`). */
    inventoryObservedAt: Timestamp,
    /** `from: null`: the label was absent; `to: null`: removed. */
    changes: z
      .array(
        z
          .object({
            key: LabelKey,
            from: LabelValue.nullable(),
            to: LabelValue.nullable(),
            reason: z.string().min(1).max(512),
          })
          .strict(),
      )
      .max(32),
    /** Labels the inventory disagrees with that gpu-reflex left alone: someone else's, or GPU Feature Discovery's. */
    leftAlone: z
      .array(
        z
          .object({
            key: LabelKey,
            value: LabelValue.nullable(),
            wanted: LabelValue.nullable(),
            why: z.enum(['set-by-someone-else', 'changed-by-someone-else', 'gfd-runs-here']),
          })
          .strict(),
      )
      .max(32),
    reason: z.string().min(1).max(2048),
    dryRun: z.boolean(),
  })
  .strict();
export type NodeLabelsChangedDetail = z.infer<typeof NodeLabelsChangedDetailSchema>;
