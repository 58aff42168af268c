import type { Command } from '../events/cli-kit/command.ts';

/**
 * The command table. Each command lives with the part it drives and is loaded only when chosen,
 * so `--help` and quick commands never pay for the Kubernetes client or koffi.
 */
export interface Entry {
  path: readonly string[];
  summary: string;
  load: () => Promise<Command>;
}

export const commands: Entry[] = [
  {
    path: ['events', 'list'],
    summary: 'list every event detail-type with its source',
    load: async () => (await import('../events/cli.ts')).listCommand,
  },
  {
    path: ['events', 'validate'],
    summary: 'validate event files against the catalog',
    load: async () => (await import('../events/cli.ts')).validateCommand,
  },
  {
    path: ['events', 'schemas'],
    summary: 'write the JSON Schema of every detail-type',
    load: async () => (await import('../events/cli.ts')).schemasCommand,
  },
  {
    path: ['bench'],
    summary: 'run the benchmarks and print their numbers with the machine and date',
    load: async () => (await import('../bench/cli.ts')).benchCommand,
  },
  {
    path: ['xid', 'scan'],
    summary: 'print the XIDs found in a kernel log (dmesg, journald or /dev/kmsg)',
    load: async () => (await import('../node-agent/cli/xid-scan.ts')).xidScanCommand,
  },
  {
    path: ['xid', 'explain'],
    summary: "print what an XID means (NVIDIA's words) and what gpu-reflex does about it",
    load: async () => (await import('../node-agent/cli/xid-explain.ts')).xidExplainCommand,
  },
  {
    path: ['agent'],
    summary: 'run the node agent: NVML → events on the bus',
    load: async () => (await import('../node-agent/cli/agent.ts')).agentCommand,
  },
  {
    path: ['bus', 'serve'],
    summary: 'run the local EventBridge (PutEvents, rules, schedules, httpApi) on serverless.yml',
    load: async () => (await import('../infra/local/bus/cli.ts')).busServeCommand,
  },
  {
    path: ['cluster', 'serve'],
    summary: 'run the simulated Kubernetes cluster alone and write a kubeconfig for it',
    load: async () => (await import('../infra/local/kube/cli.ts')).clusterServeCommand,
  },
  {
    path: ['alicloud', 'serve'],
    summary: 'run the Alibaba Cloud OpenAPI simulator (ACK node pools, ECS) alone',
    load: async () => (await import('../infra/local/alicloud/cli.ts')).aliCloudServeCommand,
  },
  {
    path: ['local'],
    summary: 'run the whole pipeline on this machine (simulated cluster, bus, functions, agents on mock GPUs)',
    load: async () => (await import('../infra/local/cli.ts')).localCommand,
  },
  {
    path: ['simulate'],
    summary: 'run a scenario through the local stack on a virtual clock (seconds, reproducible)',
    load: async () => (await import('../infra/local/cli.ts')).simulateCommand,
  },
  {
    path: ['shadow'],
    summary: 'replay recorded agent events through the functions against a real cluster, writing nothing',
    load: async () => (await import('../infra/local/shadow.ts')).shadowCommand,
  },
  {
    path: ['pattern', 'test'],
    summary: 'test an EventBridge pattern against an event, like aws events test-event-pattern',
    load: async () => (await import('../events/pattern-cli.ts')).patternTestCommand,
  },
  {
    path: ['config', 'check'],
    summary: 'validate policy files offline, with the parsers the deployed functions use',
    load: async () => (await import('./config-check.ts')).configCheckCommand,
  },
  {
    path: ['remediate', 'policy'],
    summary: 'check a remediation policy file and print the rules it yields',
    load: async () => (await import('../functions/remediate/cli.ts')).policyCommand,
  },
  {
    path: ['remediate', 'reset-support'],
    summary: 'print where NVIDIA supports resetting one GPU (SKU × topology), each row with its source',
    load: async () => (await import('./reset-support.ts')).resetSupportCommand,
  },
  {
    path: ['approve'],
    summary: 'approve or reject a held-back remediation (puts Approval Decided on the bus)',
    load: async () => (await import('../functions/remediate/approve-cli.ts')).approveCommand,
  },
  {
    path: ['approvals', 'list'],
    summary: 'list the approvals in the store (open, approved-applied, rejected, expired)',
    load: async () => (await import('../functions/remediate/approve-cli.ts')).approvalsListCommand,
  },
  {
    path: ['status'],
    summary: 'show every node gpu-reflex holds: state, GPU, why, since when, fences, approvals waiting (reads only)',
    load: async () => (await import('../functions/remediate/status-cli.ts')).statusCommand,
  },
  {
    path: ['cost', 'report'],
    summary: 'GPU-hours and cost per team and namespace, idle share apart (reads the cluster)',
    load: async () => (await import('../functions/idle/cost-cli.ts')).costReportCommand,
  },
  {
    path: ['mig', 'validate'],
    summary: "check one GPU's MIG layout against its model: valid (and where each instance sits) or why not",
    load: async () => (await import('../functions/mig/cli.ts')).migValidateCommand,
  },
  {
    path: ['mig', 'plan'],
    summary:
      'print which idle MIG GPUs to relay so pending MIG pods can run (fleet file or live cluster; changes nothing)',
    // The fleet file is the simulated cluster's: its reader comes from the local stack, so the MIG
    // CLI (and the functions bundled with it) import no simulator.
    load: async () =>
      (await import('../functions/mig/cli.ts')).createMigPlanCommand(async (path) =>
        (await import('../infra/local/mig-fleet.ts')).readFleetForMig(path),
      ),
  },
  {
    path: ['mig', 'layouts'],
    summary: 'list every MIG layout one GPU of a model can hold',
    load: async () => (await import('../functions/mig/cli.ts')).migLayoutsCommand,
  },
  {
    path: ['chat', 'verify'],
    summary:
      'check a captured Slack, DingTalk or Feishu request the way the webhook does, and say why it would be refused',
    load: async () => (await import('../functions/chatops/cli.ts')).chatVerifyCommand,
  },
  {
    path: ['quota', 'plan'],
    summary: 'print the team quotas the rewriter would write (fleet file or live cluster; changes nothing)',
    // As for mig plan: the fleet file's reader is the local stack's.
    load: async () =>
      (await import('../functions/quota/cli.ts')).createQuotaPlanCommand(async (path) =>
        (await import('../infra/local/fleet-snapshot.ts')).fleetSnapshot(path),
      ),
  },
  {
    path: ['quota', 'rollback'],
    summary: "put gpu-reflex's team quotas back to the values before their last rewrite, and hold them",
    load: async () => (await import('../functions/quota/cli.ts')).quotaRollbackCommand,
  },
  {
    path: ['remediate', 'plan'],
    summary: 'print the remediation plan for one event, in dry run (from facts, or reading a live cluster)',
    load: async () => (await import('../functions/remediate/cli.ts')).planCommand,
  },
];
