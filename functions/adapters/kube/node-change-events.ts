import type { V1Node, V1Taint } from '@kubernetes/client-node';
import type { KubeEventNote } from './ports.ts';

const taintText = (t: V1Taint) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`;

/**
 * The Event a change to a node deserves: one per write, as the kubelet records one
 * NodeNotSchedulable per change. A remediation's patch cordons and taints at once, and reads as
 * one line in `kubectl describe node` (reason Cordoned, the taint in the note): one request, not
 * one per field. Labels and annotations are not news. Empty when nothing newsworthy changed.
 */
export function nodeChangeEvents(
  before: V1Node,
  patch: { spec?: { unschedulable?: boolean; taints?: V1Taint[] } },
): KubeEventNote[] {
  const spec = patch.spec ?? {};
  const taintNews: string[] = [];
  let added = false;
  if (spec.taints) {
    const old = before.spec?.taints ?? [];
    const plus = spec.taints.filter((t) => !old.some((o) => taintText(o) === taintText(t)));
    const minus = old.filter((o) => !spec.taints!.some((t) => t.key === o.key && t.effect === o.effect));
    if (plus.length > 0) taintNews.push(`taint ${plus.map(taintText).join(', ')} added`);
    if (minus.length > 0) taintNews.push(`taint ${minus.map(taintText).join(', ')} removed`);
    added = plus.length > 0;
  }
  if (spec.unschedulable !== undefined) {
    const on = spec.unschedulable;
    const note =
      `Node marked ${on ? 'unschedulable' : 'schedulable'} by ` +
      `gpu-reflex${taintNews.length ? `; ${taintNews.join(', ')}` : ''}`;
    return [{ type: 'Normal', reason: on ? 'Cordoned' : 'Uncordoned', action: on ? 'Cordon' : 'Uncordon', note }];
  }
  if (taintNews.length === 0) return [];
  const text = taintNews.join(', ');
  return [
    {
      type: 'Normal',
      reason: added ? 'Tainted' : 'Untainted',
      action: added ? 'Taint' : 'Untaint',
      note: `${text[0]!.toUpperCase()}${text.slice(1)} by gpu-reflex`,
    },
  ];
}
