import { holdsResources, podSchedulerRequests } from './pods.ts';
import { quantityNanos, schedulerUnits } from './quantity.ts';
import type { NodeView } from './scheduler.ts';
import { unfitReason } from './scheduler.ts';
import type { KubeObject, Node, Pod } from './types.ts';

/**
 * Volcano's gang scheduling, as its documentation describes it (volcano.sh/en/docs/podgroup/,
 * volcano.sh/en/docs/plugins/ "Gang"): pods that ask for `schedulerName: volcano` and name a
 * PodGroup (`scheduling.volcano.sh/v1beta1`) in the annotation `scheduling.k8s.io/group-name` are
 * placed as a group. The allocate action binds none of a group's pods until at least
 * `spec.minMember` of them (those already running included) fit at once; meanwhile every waiting pod
 * stays Pending and says why (PodScheduled False, reason Unschedulable, as Volcano's scheduler
 * records it and cluster-autoscaler reads it), and the PodGroup is `Pending` with an
 * `Unschedulable` condition. `spec.minResources` is the least the group asks for in all: a group
 * whose pods request less never starts either.
 *
 * Written from Volcano's docs, not from the functions: placement is the default filter's
 * (scheduler.ts unfitReason) node by node in name order, each placed pod taking its room.
 */
export const GROUP_NAME_ANNOTATION = 'scheduling.k8s.io/group-name';
export const VOLCANO_SCHEDULER = 'volcano';
/** The store's name for PodGroups (resources.ts qualifiedName). */
export const PODGROUPS = 'podgroups.scheduling.volcano.sh';

export interface PodGroup extends KubeObject {
  spec?: { minMember?: number; minResources?: Record<string, string | number>; queue?: string };
  status?: { phase?: string; running?: number; conditions?: { type: string; status: string; message?: string }[] };
}

export interface GangPorts {
  groups: PodGroup[];
  /** Every pod of the cluster (a group's running pods count towards its minimum). */
  pods: Pod[];
  nodes: readonly NodeView[];
  freeOf: (n: Node) => Map<string, number>;
  bind: (pod: Pod, node: string) => void;
  pending: (pod: Pod, message: string) => void;
  groupStatus: (group: PodGroup, status: NonNullable<PodGroup['status']>) => void;
  /** Extra filter (inter-pod anti-affinity); `placed` are the pods this pass put on the node so far. */
  podFits?: (pod: Pod, node: Node, placed: readonly Pod[]) => boolean;
}

const groupOf = (p: Pod) => p.metadata.annotations?.[GROUP_NAME_ANNOTATION];
const waiting = (p: Pod) => !p.spec.nodeName && !p.metadata.deletionTimestamp && p.status?.phase === 'Pending';

/** One pass of the allocate action over every PodGroup with waiting pods. */
export function scheduleGangs(ports: GangPorts): void {
  const mine = ports.pods.filter((p) => p.spec.schedulerName === VOLCANO_SCHEDULER && groupOf(p) !== undefined);
  if (mine.length === 0) return;
  const groups = [...ports.groups].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
  // Room as this pass leaves it: a bound pod of one group is room gone for the next.
  const room = new Map<string, Map<string, number>>();
  const onNode = new Map<string, Pod[]>();
  const freeOf = (n: Node) => {
    let f = room.get(n.metadata.name);
    if (!f) room.set(n.metadata.name, (f = new Map(ports.freeOf(n))));
    return f;
  };
  for (const g of groups) {
    const ns = g.metadata.namespace ?? '';
    const members = mine.filter((p) => p.metadata.namespace === ns && groupOf(p) === g.metadata.name);
    const queue = members.filter(waiting).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    const running = members.filter((p) => p.spec.nodeName && holdsResources(p)).length;
    const min = g.spec?.minMember ?? 1;
    if (queue.length === 0) {
      if (running >= min && g.status?.phase !== 'Running') ports.groupStatus(g, { phase: 'Running', running });
      continue;
    }
    const short = shortOfMinResources(g, members);
    const trial = new Map<string, Map<string, number>>();
    const placed: { pod: Pod; node: string }[] = [];
    for (const pod of queue) {
      const node = ports.nodes.find((v) => {
        let f = trial.get(v.name);
        if (!f) trial.set(v.name, (f = new Map(freeOf(v.node))));
        if (unfitReason(pod, v.node, f) !== undefined) return false;
        const here = [...(onNode.get(v.name) ?? []), ...placed.filter((x) => x.node === v.name).map((x) => x.pod)];
        return ports.podFits ? ports.podFits(pod, v.node, here) : true;
      });
      if (!node) continue;
      const f = trial.get(node.name)!;
      f.set('pods', (f.get('pods') ?? 0) - 1);
      for (const [k, n] of podSchedulerRequests(pod)) f.set(k, (f.get(k) ?? 0) - n);
      placed.push({ pod, node: node.name });
    }
    if (short === undefined && running + placed.length >= min) {
      for (const { pod, node } of placed) {
        room.set(node, trial.get(node)!);
        onNode.set(node, [...(onNode.get(node) ?? []), pod]);
        ports.bind(pod, node);
      }
      ports.groupStatus(g, { phase: 'Running', running: running + placed.length });
      continue;
    }
    const why =
      short ??
      `${queue.length - placed.length}/${queue.length} tasks in gang unschedulable: ` +
        `${running + placed.length} of minMember ${min} fit`;
    const message = `pod group is not ready, ${queue.length} Pending, ${min} minAvailable; ${why}`;
    for (const pod of queue) {
      const cond = pod.status?.conditions?.find((c) => c.type === 'PodScheduled') as { message?: string } | undefined;
      if (cond?.message !== message) ports.pending(pod, message);
    }
    const gc = g.status?.conditions?.find((c) => c.type === 'Unschedulable');
    if (g.status?.phase !== 'Pending' || gc?.message !== why)
      ports.groupStatus(g, {
        phase: 'Pending',
        running,
        conditions: [{ type: 'Unschedulable', status: 'True', message: why }],
      });
  }
}

const keyOf = (g: PodGroup) => `${g.metadata.namespace ?? ''}/${g.metadata.name}`;

/** The first resource of `spec.minResources` that the group's pods, all together, request less of. */
function shortOfMinResources(g: PodGroup, members: readonly Pod[]): string | undefined {
  const min = g.spec?.minResources;
  if (!min) return undefined;
  const asked = new Map<string, number>();
  for (const p of members) for (const [k, n] of podSchedulerRequests(p)) asked.set(k, (asked.get(k) ?? 0) + n);
  for (const [k, v] of Object.entries(min)) {
    // In the scheduler's units (millicores for cpu), as the pods' requests are counted.
    const want = schedulerUnits(k, quantityNanos(String(v)) ?? 0n);
    if ((asked.get(k) ?? 0) < want) return `its pods request ${asked.get(k) ?? 0} ${k}, minResources asks ${want}`;
  }
  return undefined;
}
