import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { parseConfigText, validateConfig } from '../../../functions/lib/yaml-text.ts';
import { PreemptionSpec, SystemEventSpec } from './system-events.ts';

/**
 * The cloud file: what the Alibaba Cloud simulator starts with (region, one ACK cluster, its node
 * pools and their running instances, AccessKeys, timings, injected faults). YAML or JSON,
 * validated with zod so a mistake names its field.
 */
const Labels = z.record(z.string(), z.string());
const Taint = z
  .object({
    key: z.string(),
    value: z.string().optional(),
    effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
  })
  .strict();

const InstanceType = z
  .object({
    id: z
      .string()
      .regex(/^ecs\.[a-z0-9-]+\.[a-z0-9-]+$/, 'must look like ecs.<family>.<size>, e.g. ecs.gn7i-c8g1.2xlarge'),
    family: z.string().optional(),
    gpuAmount: z.number().int().nonnegative(),
    gpuSpec: z.string(),
    gpuMemoryGiB: z.number().nonnegative(),
    cpu: z.number().int().positive(),
    memoryGiB: z.number().positive(),
    pricePerHour: z.number().nonnegative(),
  })
  .strict();

const Pool = z
  .object({
    id: z.string().regex(/^np[a-z0-9-]*$/, 'must start with "np" (ACK node pool ids do)'),
    name: z.string().min(1),
    instanceTypes: z.array(z.string()).min(1),
    /** Instances running when the simulator starts; also the pool's desired size then. */
    size: z.number().int().nonnegative().default(0),
    /** Node names of the first running instances (the local stack passes the fleet's nodes of this pool). */
    nodeNames: z.array(z.string().min(1)).default([]),
    /** ACK's own autoscaler settings for the pool (`auto_scaling`); gpu-reflex defers to an enabled one. */
    autoScaling: z
      .object({
        enable: z.boolean().default(false),
        min: z.number().int().nonnegative().default(0),
        max: z.number().int().positive().max(2000).default(100),
      })
      .strict()
      .default({ enable: false, min: 0, max: 100 }),
    /** ACK managed auto repair (GPU fault isolation) on for this pool. */
    autoRepair: z.boolean().default(false),
    chargeType: z.enum(['PostPaid', 'PrePaid']).default('PostPaid'),
    /** `scaling_group.spot_strategy` and `spot_price_limit` (per type): ACK's spot node pools. */
    spotStrategy: z.enum(['NoSpot', 'SpotWithPriceLimit', 'SpotAsPriceGo']).default('NoSpot'),
    spotPriceLimit: z.record(z.string(), z.number().positive()).default({}),
    labels: Labels.default({}),
    taints: z.array(Taint).default([]),
  })
  .strict();

const Fault = z
  .object({
    action: z.string(),
    /** The next N calls of `action` answer `Throttling.User`. */
    throttle: z.number().int().positive().optional(),
    /** The next N tasks `action` starts end `failed`. */
    failTasks: z.number().int().positive().optional(),
  })
  .strict();

export const CloudFileSchema = z
  .object({
    regionId: z.string().default('cn-hangzhou'),
    zoneId: z.string().optional(),
    clusterId: z.string().default('c0gpureflexlocal'),
    credentials: z
      .array(z.object({ accessKeyId: z.string().min(1), accessKeySecret: z.string().min(1) }).strict())
      .min(1)
      .default([{ accessKeyId: 'LTAI5tLocalGpuReflex', accessKeySecret: 'local-simulator-secret' }]),
    /** From ModifyClusterNodePool/ScaleClusterNodePool to the instance Running (and its node joining). */
    bootSeconds: z.number().nonnegative().default(180),
    rebootSeconds: z.number().nonnegative().default(60),
    /** From RemoveNodePoolNodes to the instances gone. */
    removeSeconds: z.number().nonnegative().default(60),
    instanceTypes: z.array(InstanceType).default([]),
    pools: z.array(Pool).default([]),
    faults: z.array(Fault).default([]),
    /**
     * How many more instances of each type the zone can supply (absent: no limit). A node pool's
     * scale-out takes its instance types in order and falls back to the next when one is sold out;
     * when none has stock the task fails `OperationDenied.NoStock` (cloud.ts `grow`).
     */
    stock: z.record(z.string(), z.number().int().nonnegative()).default({}),
    /** The current spot price per hour of each type (DescribeSpotPriceHistory); absent: no spot offer. */
    spotPrices: z.record(z.string(), z.number().positive()).default({}),
    /** ECS system events to publish (planned maintenance: a reboot or redeploy at `notBeforeSeconds`). */
    systemEvents: z.array(SystemEventSpec).default([]),
    /** Spot interruptions: the instance is locked `Recycling`, then reclaimed 5 minutes later. */
    preemptions: z.array(PreemptionSpec).default([]),
  })
  .strict()
  .superRefine((c, ctx) => {
    const ids = new Set<string>();
    c.pools.forEach((p, i) => {
      if (ids.has(p.id))
        ctx.addIssue({ code: 'custom', path: ['pools', i, 'id'], message: `duplicate node pool id ${p.id}` });
      ids.add(p.id);
    });
  });

export type CloudFile = z.input<typeof CloudFileSchema>;
export type ParsedCloudFile = z.output<typeof CloudFileSchema>;

export class CloudFileError extends Error {
  override name = 'CloudFileError';
}

export function validateCloudFile(raw: unknown, source = 'cloud file'): ParsedCloudFile {
  return validateConfig(raw, source, CloudFileSchema, (m) => new CloudFileError(m));
}

export function parseCloudFile(text: string, source = 'cloud file'): ParsedCloudFile {
  return parseConfigText(text, source, CloudFileSchema, (m) => new CloudFileError(m));
}

export function loadCloudFile(path: string): ParsedCloudFile {
  return parseCloudFile(readFileSync(path, 'utf8'), path);
}

export const EXAMPLE_CLOUD_PATH = new URL('./clouds/example.yaml', import.meta.url).pathname;
