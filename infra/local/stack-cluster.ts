import { join } from 'node:path';
import type { VirtualClock } from '../../events/clock.ts';
import { startKubeSim, wallClock, type KubeSim } from './kube/index.ts';
import { AGENT_USER, FUNCTIONS_USER, installShippedRbac, type ShippedComponent } from './kube/shipped-rbac.ts';
import type { Scenario } from './scenario.ts';
import { kubeconfigText } from './timeline.ts';

/** The stack's cluster: the simulated one with the shipped RBAC, or the caller's (`--kubeconfig`). */
export interface StackCluster {
  sim: KubeSim | undefined;
  kubeconfig: string;
  /** The identity the functions act as (their ServiceAccount on the simulated cluster). */
  functionsKubeconfig: string | undefined;
  /** The identity the agents act as. */
  agentKubeconfig: string | undefined;
}

/** Starts the simulated cluster unless `kubeconfig` names one; pushes what it started onto `cleanups`. */
export async function startCluster(
  scenario: Scenario,
  c: {
    kubeconfig: string | undefined;
    virtual: boolean;
    vclock: VirtualClock | undefined;
    work: string;
    progress: (s: string) => void;
    cleanups: (() => unknown)[];
  },
): Promise<StackCluster> {
  const { virtual, vclock, work, progress, cleanups } = c;
  let sim: KubeSim | undefined;
  let kubeconfig = c.kubeconfig;
  // A real cluster (--kubeconfig): everyone uses the caller's identity.
  let functionsKubeconfig = c.kubeconfig;
  let agentKubeconfig = c.kubeconfig;
  if (!kubeconfig) {
    progress(`starting the simulated Kubernetes cluster (${scenario.parsedFleet.nodes.length} node groups) ...`);
    sim = await startKubeSim({
      fleet: scenario.parsedFleet,
      clock: vclock ?? wallClock,
      apis: {
        ...(scenario.kubernetesVersion ? { kubernetesVersion: scenario.kubernetesVersion } : {}),
        ...(scenario.featureGates ? { featureGates: scenario.featureGates } : {}),
        ...(scenario.runtimeConfig ? { runtimeConfig: scenario.runtimeConfig } : {}),
      },
    });
    const started = sim;
    cleanups.push(() => started.close());
    kubeconfig = join(work, 'kubeconfig');
    sim.writeKubeconfig(kubeconfig);
    progress(`  cluster at ${sim.url}: ${sim.store.count('nodes')} nodes, ${sim.store.count('pods')} pods`);
    if (!virtual) progress(kubeconfigText(kubeconfig));
    // The functions and the agents run as their ServiceAccounts under infra/k8s's RBAC (shipped-rbac.ts).
    const skipped = installShippedRbac(sim.cluster, shippedComponents(scenario));
    for (const s of skipped) progress(`  infra/k8s: left out ${s}`);
    functionsKubeconfig = join(work, 'kubeconfig-functions');
    sim.writeKubeconfig(functionsKubeconfig, FUNCTIONS_USER);
    agentKubeconfig = join(work, 'kubeconfig-agent');
    sim.writeKubeconfig(agentKubeconfig, AGENT_USER);
    progress(`  functions act as ${FUNCTIONS_USER}, agents as ${AGENT_USER} (RBAC from infra/k8s)`);
  } else progress(`using the cluster in ${kubeconfig}`);
  return { sim, kubeconfig, functionsKubeconfig, agentKubeconfig };
}

/**
 * The infra/k8s components a scenario's deployment enables, as docs/deploy.md tells people to: the
 * actuator unless the agents run without it, the reset pause where the actuators pause the GPU
 * Operator, ACK cGPU's RBAC where a node shares its cards.
 */
function shippedComponents(scenario: Scenario): ShippedComponent[] {
  const nodes = scenario.parsedFleet.nodes;
  return [
    ...(scenario.agents.actuator === false ? [] : (['actuator'] as const)),
    ...(scenario.agents.actuator !== false && scenario.agents.pauseOperator ? (['actuator-reset-pause'] as const) : []),
    ...(nodes.some((n) => Object.keys({ ...n.capacity, ...n.allocatable }).some((k) => k.startsWith('aliyun.com/gpu')))
      ? (['ack-cgpu'] as const)
      : []),
  ];
}
