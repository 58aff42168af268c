/**
 * The simulated Alibaba Cloud inside the local stack: the region of the scenario's `cloud:`, on the
 * stack's one clock, with its instances mirrored as Nodes of the simulated cluster as ACK would:
 * an instance that finished booting joins (its pool's labels and taints, its instance type's CPUs,
 * memory and GPUs, ACK's node-pool label), a rebooting one goes NotReady and comes back with a new
 * boot id, a removed one is cordoned (drained when asked) and then leaves with its pods.
 *
 * The functions reach it through ALIBABA_CLOUD_* variables (`env`), as they would reach the real
 * endpoint, and remediation reboots through it (REMEDIATION_REPAIR=alicloud). A GPU node that joins
 * gets its agent, on a mock NVML of its own, as the DaemonSet would start one (stack.ts).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../../events/clock.ts';
import { ACK_GPU_SCHEDULE_LABEL, ACK_NODEPOOL_LABEL, gpuResources } from './alicloud/ack-nodes.ts';
import type { CloudChange, SimInstance, SimPool } from './alicloud/cloud.ts';
import type { ParsedCloudFile } from './alicloud/cloud-file.ts';
import { startAliCloudSim, type AliCloudSim } from './alicloud/index.ts';
import type { Cluster } from './kube/cluster.ts';
import { resource } from './kube/resources.ts';
import type { TimelineEntry } from './timeline.ts';

export interface StackCloud {
  sim: AliCloudSim;
  /** What the functions read to reach it (and the autoscaler's policy file, when the scenario has one). */
  env: Record<string, string>;
  close(): Promise<void>;
}

type Emit = (e: Omit<TimelineEntry, 'atMs'>) => void;

function nodeBody(sim: AliCloudSim, inst: SimInstance, pool: SimPool) {
  const type = sim.cloud.types.get(inst.instanceType)!;
  const gpus = gpuResources(pool.spec.labels[ACK_GPU_SCHEDULE_LABEL], type.gpuAmount, type.gpuMemoryGiB);
  const capacity = { cpu: String(type.cpu), memory: `${type.memoryGiB}Gi`, pods: '110', ...gpus };
  // The kubelet keeps some back: half a core and a GiB (the autoscaler's default reserve).
  const allocatable = { ...capacity, cpu: `${type.cpu * 1000 - 500}m`, memory: `${type.memoryGiB * 1024 - 1024}Mi` };
  return {
    metadata: {
      name: inst.nodeName,
      labels: {
        'kubernetes.io/hostname': inst.nodeName,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'node.kubernetes.io/instance-type': inst.instanceType,
        'topology.kubernetes.io/region': sim.cloud.regionId,
        'topology.kubernetes.io/zone': sim.cloud.zoneId,
        ...pool.spec.labels,
        [ACK_NODEPOOL_LABEL]: pool.spec.id,
      },
    },
    spec: {
      providerID: `${sim.cloud.regionId}.${inst.id}`,
      ...(pool.spec.taints.length > 0 ? { taints: pool.spec.taints } : {}),
    },
    status: { capacity, allocatable, nodeInfo: { bootID: inst.bootId } },
  };
}

export interface StackCloudOptions {
  cloud: ParsedCloudFile;
  clock: Clock;
  cluster: Cluster | undefined;
  work: string;
  autoscalePolicyText?: string;
  emit: Emit;
  /** A node's instance starts rebooting: its GPUs come back reset (the stack's mock NVML). */
  onReboot?: (node: string) => void;
  /** A new instance joined as this node: the stack starts its agent (the DaemonSet's pod). */
  onJoin?: (node: string) => void;
  /** The node left with its instance: the stack stops its agent. */
  onLeave?: (node: string) => void;
}

export async function startStackCloud(o: StackCloudOptions): Promise<StackCloud> {
  const sim = await startAliCloudSim({ cloud: o.cloud, clock: o.clock });
  const nodes = resource('nodes');
  const pods = resource('pods');
  // The fleet's nodes of a pool are its first instances: ACK's providerID names them.
  for (const inst of sim.cloud.instances.values()) {
    if (o.cluster?.store.get('nodes', '', inst.nodeName))
      o.cluster.patch(nodes, '', inst.nodeName, 'application/merge-patch+json', {
        spec: { providerID: `${sim.cloud.regionId}.${inst.id}` },
      });
  }
  const who = `alicloud`;
  const setReady = (name: string, ready: boolean, bootId?: string) => {
    const node = o.cluster?.store.get('nodes', '', name);
    if (!node || !o.cluster) return;
    const status = node.status as {
      conditions?: { type: string; status: string; reason?: string; message?: string }[];
      nodeInfo?: Record<string, string>;
    };
    const conditions = (status.conditions ?? []).filter((c) => c.type !== 'Ready');
    conditions.push(
      ready
        ? { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }
        : {
            type: 'Ready',
            status: 'Unknown',
            reason: 'NodeStatusUnknown',
            message: 'Kubelet stopped posting node status (the instance is rebooting).',
          },
    );
    o.cluster.patch(
      nodes,
      '',
      name,
      'application/merge-patch+json',
      { status: { conditions, ...(bootId ? { nodeInfo: { ...(status.nodeInfo ?? {}), bootID: bootId } } : {}) } },
      { subresource: 'status' },
    );
  };
  const off = sim.cloud.onChange((c: CloudChange) => {
    const inst = c.instance;
    const cluster = o.cluster;
    if (c.type === 'running') {
      if (!c.pool || !cluster) return;
      if (cluster.store.get('nodes', '', inst.nodeName)) {
        setReady(inst.nodeName, true, inst.bootId);
        o.emit({
          who,
          kind: 'cluster',
          what: '',
          text: `${inst.nodeName} (${inst.id}) is back from its reboot: Ready, new boot id`,
        });
        return;
      }
      cluster.create(nodes, '', nodeBody(sim, inst, c.pool));
      o.emit({
        who,
        kind: 'cluster',
        what: '',
        text: `${inst.nodeName} joined the cluster: ${inst.id}, ${inst.instanceType}, node pool ${c.pool.spec.name}`,
      });
      o.onJoin?.(inst.nodeName);
    } else if (c.type === 'rebooting') {
      setReady(inst.nodeName, false);
      o.onReboot?.(inst.nodeName);
      o.emit({ who, kind: 'cluster', what: '', text: `${inst.id} (${inst.nodeName}) is rebooting` });
    } else if (c.type === 'removing') {
      if (cluster?.store.get('nodes', '', inst.nodeName))
        cluster.patch(nodes, '', inst.nodeName, 'application/merge-patch+json', { spec: { unschedulable: true } });
      o.emit({
        who,
        kind: 'cluster',
        what: '',
        text:
          `ACK removes ${inst.nodeName} (${inst.id}) from node ` +
          `pool ${c.pool.spec.name}${c.drain ? ', draining it' : ''}`,
      });
    } else if (c.type === 'removed') {
      if (cluster?.store.get('nodes', '', inst.nodeName)) {
        for (const p of cluster.store.podsOnNode(inst.nodeName))
          cluster.delete(pods, p.metadata.namespace!, p.metadata.name, { gracePeriodSeconds: 0 });
        cluster.delete(nodes, '', inst.nodeName);
      }
      o.onLeave?.(inst.nodeName);
      o.emit({
        who,
        kind: 'cluster',
        what: '',
        text:
          `${inst.nodeName} left the ` +
          `cluster${c.released ? `; ${inst.id} released` : ` (${inst.id} is subscription: kept, not released)`}`,
      });
    }
  });
  const c = sim.connection;
  const env: Record<string, string> = {
    ALIBABA_CLOUD_REGION_ID: c.regionId,
    ACK_CLUSTER_ID: c.clusterId,
    ALIBABA_CLOUD_ACCESS_KEY_ID: c.accessKeyId,
    ALIBABA_CLOUD_ACCESS_KEY_SECRET: c.accessKeySecret,
    ALIBABA_CLOUD_ENDPOINT: c.endpoint,
    ALIBABA_CLOUD_PROTOCOL: 'http',
    // Remediation's cloud hands: a drained node is rebooted through ECS.
    REMEDIATION_REPAIR: 'alicloud',
  };
  if (o.autoscalePolicyText !== undefined) {
    const path = join(o.work, 'autoscale-policy.yaml');
    writeFileSync(path, o.autoscalePolicyText);
    env.AUTOSCALE_POLICY_FILE = path;
  }
  return {
    sim,
    env,
    close: async () => {
      off();
      await sim.close();
    },
  };
}
