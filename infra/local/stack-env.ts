import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The environment the stack gives the functions it runs in-process (they read it as a Lambda
 * reads its configuration, functions/config.ts): where the cluster is, and where to publish back.
 * The other cluster sources are unset, because the functions insist on exactly one.
 * Documented in docs/local-stack.md.
 */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** serverless.yml's bus at its default stage (`gpu-reflex-${sls:stage}`, stage dev): the embedded stack's bus. */
export const LOCAL_BUS_NAME = 'gpu-reflex-dev';

export function functionEnv(o: {
  kubeconfig: string;
  busUrl: string;
  busName: string;
  region?: string;
  approvalKey?: string;
}): Record<string, string | undefined> {
  return {
    // The key that seals approvals (functions/lib/approval-seal.ts): one per stack, never a default
    // a deployment could inherit; `gpu-reflex approve` against this stack takes it from the environment.
    GPU_REFLEX_APPROVAL_KEY: o.approvalKey ?? randomBytes(32).toString('base64url'),
    GPU_REFLEX_APPROVAL_KEY_PARAMETER: undefined,
    KUBECONFIG: o.kubeconfig,
    GPU_REFLEX_KUBECONFIG_TEXT: undefined,
    GPU_REFLEX_IN_CLUSTER: undefined,
    GPU_REFLEX_KUBECONFIG_PARAMETER: undefined,
    GPU_REFLEX_KUBECONFIG_ACK: undefined,
    EVENT_BUS_NAME: o.busName,
    AWS_ENDPOINT_URL_EVENTBRIDGE: o.busUrl,
    // Dummy credentials: the local bus checks the SigV4 shape, never the secret.
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_REGION: o.region ?? 'us-east-1',
    // The functions' info logs would bury the timeline; their actions show as Remediation events.
    // LOG_LEVEL=info in the caller's environment brings the JSON logs back.
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  };
}

/** Sets (or, for undefined, unsets) variables in process.env; the returned function puts back what was there. */
export function withEnv(vars: Record<string, string | undefined>): () => void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}

/**
 * What the timeline says next to pending GPU pods. serverless.yml is the truth about what is
 * deployed: while it has no MIG rebalancer or pool autoscaler, the timeline says so plainly; and a
 * scenario whose node pools no autoscaler manages says that instead of letting the reader wait.
 */
export function gapNotice(resource: string, functionKeys: ReadonlySet<string>, autoscaledPools = 0): string {
  if (resource.startsWith('nvidia.com/mig-'))
    return functionKeys.has('rebalance-mig') ? '' : ' — MIG rebalancing is not built yet';
  if (resource === 'nvidia.com/gpu') {
    if (!functionKeys.has('autoscale-pools')) return ' — pool autoscaling is not built yet';
    return autoscaledPools > 0
      ? ''
      : ' — no node pool in this scenario is autoscaled (infra/local/scenarios/pool-autoscale.yaml has one)';
  }
  return '';
}
