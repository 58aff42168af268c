/**
 * The default policy: each XID's rule from the XID catalog (events/xid.ts), each health
 * condition's and recovery action's rule, and the pool, fence and repair defaults.
 */
import {
  XID_CATALOG,
  type GpuRecoveryAction,
  type HealthCondition,
  type RemediationAction,
} from '../../../events/index.ts';
import type { Policy, RuleOverride } from './policy-schema.ts';

const RESET: RemediationAction[] = ['reboot-node', 'replace-node'];

const DEFAULT_ESCALATION = { count: 3, windowMinutes: 60, distinctWorkloads: 2 } as const;
/** Health conditions (docs/remediation.md has the why of each row). */
export const CONDITION_DEFAULTS: Record<HealthCondition, RuleOverride> = {
  temperature: {
    action: 'quarantine-gpu',
    then: [],
    notify: true,
    bySeverity: { info: 'observe', warning: 'observe' },
  },
  // The HBM past its limit is as urgent as the GPU past its slowdown temperature.
  'memory-temperature': {
    action: 'quarantine-gpu',
    then: [],
    notify: true,
    bySeverity: { info: 'observe', warning: 'observe' },
  },
  power: { action: 'observe', then: [] },
  'utilization-high': { action: 'ignore', then: [] },
  'framebuffer-high': { action: 'ignore', then: [] },
  'ecc-uncorrected': { action: 'quarantine-gpu', then: RESET },
  'retired-pages-pending': { action: 'observe', then: ['quarantine-gpu'], notify: true },
  'row-remap-pending': { action: 'observe', then: ['quarantine-gpu'], notify: true },
  'row-remap-failure': { action: 'quarantine-gpu', then: ['replace-node'], notify: true },
  throttling: { action: 'observe', then: [] },
  'nvlink-down': { action: 'quarantine-gpu', then: RESET },
  // A degrading link still carries traffic; a link that goes down is nvlink-down's business.
  'nvlink-errors': { action: 'observe', then: [], notify: true },
  // A lane down or a link trained slow: work still runs, slower; a person reseats or replaces.
  'pcie-link-degraded': { action: 'observe', then: [], notify: true },
  // The fabric manager is a node service; restarting it (or not) is a person's call.
  fabric: { action: 'observe', then: [], notify: true },
  // NVIDIA's RMA test for XID 48: the GPU goes, whatever the count of XIDs.
  'sram-threshold-exceeded': { action: 'quarantine-gpu', then: ['replace-node'], notify: true },
  'gpu-lost': { action: 'drain-node', then: RESET },
  // Gone before the agent could see it fall: the same verdict as a GPU lost while watched.
  'gpu-missing': { action: 'drain-node', then: RESET, notify: true },
  // Fewer GPUs than the node should have, none to name (it was gone before any agent saw it).
  'gpu-count': { action: 'drain-node', then: RESET, notify: true },
  // Placeholder: a recovery-action event obeys `recoveryActions` below.
  'recovery-action': { action: 'observe', then: [] },
  'monitoring-degraded': { action: 'observe', then: [], notify: true },
};

export const RECOVERY_DEFAULTS: Record<GpuRecoveryAction, RuleOverride> = {
  none: { action: 'observe', then: [] },
  'gpu-reset': { action: 'quarantine-gpu', then: RESET },
  'node-reboot': { action: 'drain-node', then: RESET },
  'drain-p2p': { action: 'quarantine-gpu', then: RESET },
  // "Reduced capacity; running work is safe; reset when convenient": one GPU, never the node.
  // New work is fenced off it at once; its running pods get up to 8 h to finish before they move.
  'drain-and-reset': { action: 'quarantine-gpu', then: RESET, letWorkFinish: { deadlineMinutes: 480 } },
  'recover-imex-domain': { action: 'observe', then: [], notify: true },
};

function xidDefaults(): Record<string, RuleOverride> {
  const out: Record<string, RuleOverride> = {};
  for (const info of XID_CATALOG.values()) {
    out[String(info.xid)] = {
      action: info.action,
      then: [...info.then],
      notify: info.notify,
      escalate: info.escalateOnRepeat ? { ...DEFAULT_ESCALATION } : false,
    };
  }
  return out;
}

export const DEFAULT_POLICY: Policy = deepFreeze({
  xids: xidDefaults(),
  conditions: CONDITION_DEFAULTS,
  recoveryActions: RECOVERY_DEFAULTS,
  pools: {},
  profiles: {},
  poolLabels: ['gpu-reflex.io/pool', 'alibabacloud.com/nodepool-id', 'accelerator'],
  // EKS node auto repair pauses beyond 20% of a node group.
  blastRadius: { maxShare: 0.2, maxCount: 10, windowMinutes: 60 },
  escalation: { ...DEFAULT_ESCALATION, recurrenceHours: 24 },
  quietPeriodMinutes: 30,
  drainTimeoutMinutes: 30,
  taintKey: 'gpu-reflex.io/unhealthy',
  approvals: { ttlMinutes: 60, approvers: [] },
  // The GPU Operator's mig-manager DaemonSet (its default namespace and pod label).
  repair: {
    answerTimeoutMinutes: 10,
    probeSeconds: 30,
    dcgmDiag: 0,
    rebootTimeoutMinutes: 30,
    replaceTimeoutMinutes: 45,
    pdbDeadlineMinutes: 30,
    migManager: { namespace: 'gpu-operator', selector: { app: 'nvidia-mig-manager' } },
  },
  // NVIDIA's static DaemonSet manifest (nvidia-device-plugin.yml); the Helm chart and the GPU
  // Operator use other names: set fence.nvidiaPlugin for them.
  fence: {
    backend: 'ack-file',
    verifyMinutes: 2,
    nvidiaPlugin: { namespace: 'kube-system', selector: { name: 'nvidia-device-plugin-ds' } },
    dra: { driver: 'gpu.nvidia.com', deviceTaintRuleVersion: 'v1', resourceSliceVersion: 'v1' },
  },
});

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
