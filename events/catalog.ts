/**
 * The event catalog: every detail-type gpu-reflex sends, who sends it, and its schema. The agent
 * parses before it sends; functions parse on arrival. Both import this file.
 */
import { readFileSync } from 'node:fs';
import type * as z from 'zod';
import { SOURCES, type EventSource } from './common.ts';
import { GPU_XID_ERROR, GpuXidErrorDetailSchema } from './catalog/gpu-xid-error.ts';
import { GPU_HEALTH_CHANGED, GpuHealthChangedDetailSchema } from './catalog/gpu-health-changed.ts';
import { GPU_UTILIZATION_SUMMARY, GpuUtilizationSummaryDetailSchema } from './catalog/gpu-utilization-summary.ts';
import { GPU_INVENTORY, GpuInventoryDetailSchema } from './catalog/gpu-inventory.ts';
import { REMEDIATION, RemediationDetailSchema } from './catalog/remediation.ts';
import { MIG_LAYOUT_CHANGE, MigLayoutChangeDetailSchema } from './catalog/mig-layout-change.ts';
import { GPU_POOL_SCALED, GpuPoolScaledDetailSchema } from './catalog/gpu-pool-scaled.ts';
import { QUOTA_REWRITTEN, QuotaRewrittenDetailSchema } from './catalog/quota-rewritten.ts';
import { GPU_ACTION_RESULT, GpuActionResultDetailSchema } from './catalog/gpu-action.ts';
import { NODE_LABELS_CHANGED, NodeLabelsChangedDetailSchema } from './catalog/node-labels-changed.ts';
import { GPU_IDLE_ALLOCATION, GpuIdleAllocationDetailSchema } from './catalog/gpu-idle-allocation.ts';
import { NVSWITCH_SXID_ERROR, NvSwitchSxidErrorDetailSchema } from './catalog/nvswitch-sxid-error.ts';
import {
  DEVICE_PLUGIN_ACTION,
  DEVICE_PLUGIN_MISMATCH,
  DevicePluginActionDetailSchema,
  DevicePluginMismatchDetailSchema,
} from './catalog/device-plugin.ts';
import {
  APPROVAL_DECIDED,
  APPROVAL_REQUESTED,
  ApprovalDecidedDetailSchema,
  ApprovalRequestedDetailSchema,
  CHATOPS_COMMAND,
  CHATOPS_COMMAND_REQUESTED,
  ChatOpsCommandDetailSchema,
  ChatOpsCommandRequestedDetailSchema,
} from './catalog/chatops.ts';

export interface CatalogEntry {
  detailType: string;
  source: EventSource;
  /** File-name stem of the example and the exported JSON Schema: `gpu-xid-error`. */
  slug: string;
  summary: string;
  schema: z.ZodType;
}

export const CATALOG: readonly CatalogEntry[] = [
  {
    detailType: GPU_XID_ERROR,
    source: SOURCES.agent,
    slug: 'gpu-xid-error',
    summary: 'an XID on one GPU (NVML event or kernel log)',
    schema: GpuXidErrorDetailSchema,
  },
  {
    detailType: GPU_HEALTH_CHANGED,
    source: SOURCES.agent,
    slug: 'gpu-health-changed',
    summary: 'a health threshold crossed or cleared',
    schema: GpuHealthChangedDetailSchema,
  },
  {
    detailType: GPU_UTILIZATION_SUMMARY,
    source: SOURCES.agent,
    slug: 'gpu-utilization-summary',
    summary: 'per-GPU and per-MIG-device window aggregates',
    schema: GpuUtilizationSummaryDetailSchema,
  },
  {
    detailType: GPU_INVENTORY,
    source: SOURCES.agent,
    slug: 'gpu-inventory',
    summary: 'GPUs, MIG layout and the pods using them',
    schema: GpuInventoryDetailSchema,
  },
  {
    detailType: NVSWITCH_SXID_ERROR,
    source: SOURCES.agent,
    slug: 'nvswitch-sxid-error',
    summary: 'an NVSwitch error (SXid) from the kernel log',
    schema: NvSwitchSxidErrorDetailSchema,
  },
  {
    detailType: DEVICE_PLUGIN_MISMATCH,
    source: SOURCES.agent,
    slug: 'device-plugin-mismatch',
    summary: "NVML's GPUs and the devices the node advertises disagree (a dead or misconfigured device plugin)",
    schema: DevicePluginMismatchDetailSchema,
  },
  {
    detailType: GPU_ACTION_RESULT,
    source: SOURCES.agent,
    slug: 'gpu-action-result',
    summary: 'an agent finished a GPU action the functions requested (fence, drain, reset, probe)',
    schema: GpuActionResultDetailSchema,
  },
  {
    detailType: REMEDIATION,
    source: SOURCES.functions,
    slug: 'remediation',
    summary: 'what was decided and done about a fault',
    schema: RemediationDetailSchema,
  },
  {
    detailType: MIG_LAYOUT_CHANGE,
    source: SOURCES.functions,
    slug: 'mig-layout-change',
    summary: 'a MIG layout planned, applied or failed',
    schema: MigLayoutChangeDetailSchema,
  },
  {
    detailType: GPU_POOL_SCALED,
    source: SOURCES.functions,
    slug: 'gpu-pool-scaled',
    summary: 'a GPU node pool resized',
    schema: GpuPoolScaledDetailSchema,
  },
  {
    detailType: QUOTA_REWRITTEN,
    source: SOURCES.functions,
    slug: 'quota-rewritten',
    summary: 'a team ResourceQuota rewritten',
    schema: QuotaRewrittenDetailSchema,
  },
  {
    detailType: NODE_LABELS_CHANGED,
    source: SOURCES.functions,
    slug: 'node-labels-changed',
    summary: "a GPU node's labels changed to follow its inventory",
    schema: NodeLabelsChangedDetailSchema,
  },
  {
    detailType: GPU_IDLE_ALLOCATION,
    source: SOURCES.functions,
    slug: 'gpu-idle-allocation',
    summary: 'a GPU allocated to a pod sat idle past its policy window, or was reclaimed, or came back to work',
    schema: GpuIdleAllocationDetailSchema,
  },
  {
    detailType: DEVICE_PLUGIN_ACTION,
    source: SOURCES.functions,
    slug: 'device-plugin-action',
    summary: "a node's device plugin restarted, or its node tainted and a person told, or the taint lifted",
    schema: DevicePluginActionDetailSchema,
  },
  {
    detailType: APPROVAL_REQUESTED,
    source: SOURCES.functions,
    slug: 'approval-requested',
    summary: 'a plan waits for a person in chat',
    schema: ApprovalRequestedDetailSchema,
  },
  {
    detailType: CHATOPS_COMMAND,
    source: SOURCES.chatops,
    slug: 'chatops-command',
    summary: 'a command typed in Slack, DingTalk or Feishu',
    schema: ChatOpsCommandDetailSchema,
  },
  {
    detailType: CHATOPS_COMMAND_REQUESTED,
    source: SOURCES.chatops,
    slug: 'chatops-command-requested',
    summary: 'a long Slack, Feishu or DingTalk command left for chatops-worker, as the platform signed it',
    schema: ChatOpsCommandRequestedDetailSchema,
  },
  {
    detailType: APPROVAL_DECIDED,
    source: SOURCES.chatops,
    slug: 'approval-decided',
    summary: 'a person approved or rejected a plan',
    schema: ApprovalDecidedDetailSchema,
  },
];

const byType = new Map(CATALOG.map((e) => [e.detailType, e]));

export function catalogEntry(detailType: string): CatalogEntry | undefined {
  return byType.get(detailType);
}

/** The example event (full envelope) kept beside each schema in events/catalog/. */
export function exampleEvent(entry: CatalogEntry): unknown {
  return JSON.parse(readFileSync(new URL(`./catalog/${entry.slug}.example.json`, import.meta.url), 'utf8'));
}

export { SOURCES };
