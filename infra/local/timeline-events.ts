import type { EventEnvelope } from './bus/index.ts';
import { describeXid } from '../../events/xid.ts';
import type { TimelineEntry } from './timeline-entry.ts';
import { podsText, remediationText, utilizationText, type PodName } from './timeline-event-words.ts';

/** One accepted bus event → a timeline entry. `podName` turns a pod UID into `ns/name`. */
export function eventEntry(atMs: number, e: EventEnvelope, podName: PodName): TimelineEntry {
  const d = e.detail as Record<string, unknown>;
  const node = typeof d.node === 'string' ? d.node : e.source;
  const gpu = d.gpu as { index?: number } | undefined;
  const onGpu = gpu?.index !== undefined ? ` on GPU ${gpu.index}` : '';
  switch (e['detail-type']) {
    case 'GPU XID Error': {
      const xid = Number(d.xid);
      const mig = d.mig as { gpuInstanceId?: number } | undefined;
      return {
        atMs,
        who: node,
        kind: 'event',
        what: 'GPU XID Error',
        text:
          `XID ${xid} (${describeXid(xid).meaning})${onGpu}${mig ? ` instance ${mig.gpuInstanceId}` : ''} ` +
          `via ${String(d.via)}${podsText(d.pods, podName)}`,
      };
    }
    case 'GPU Health Changed':
      return {
        atMs,
        who: node,
        kind: 'event',
        what: 'GPU Health Changed',
        text:
          `${String(d.condition)} ${String(d.state)} ` +
          `(${String(d.severity)})${onGpu}: ${String(d.message ?? '')}${podsText(d.pods, podName)}`,
      };
    case 'GPU Inventory': {
      const gpus = (d.gpus as { name?: string; processes?: { podUid?: string }[] }[] | undefined) ?? [];
      const pods = new Set(gpus.flatMap((g) => (g.processes ?? []).map((p) => p.podUid).filter(Boolean)));
      // Who holds them by the kubelet's PodResources, when the agent could read it.
      const holders = d.holders as { namespace: string; name: string }[] | undefined;
      const held = holders ? new Set(holders.map((h) => `${h.namespace}/${h.name}`)).size : undefined;
      const byKubelet = held === undefined ? '' : `; PodResources: ${held} pod${held === 1 ? '' : 's'} hold GPUs`;
      return {
        atMs,
        who: node,
        kind: 'event',
        what: 'GPU Inventory',
        text:
          `${gpus.length} × ${gpus[0]?.name ?? 'GPU'}, ${pods.size} pod${pods.size === 1 ? '' : 's'} on them` +
          byKubelet,
      };
    }
    case 'GPU Utilization Summary':
      return { atMs, who: node, kind: 'event', what: 'GPU Utilization Summary', text: utilizationText(d) };
    case 'Remediation':
      return {
        atMs,
        who: 'remediate',
        kind: 'action',
        what: '',
        text: remediationText(d),
        ...(d.reason ? { why: String(d.reason) } : {}),
      };
    case 'Approval Requested': {
      // The ID a person needs to decide it, on screen where the hold happens (issue #31).
      const id = String(d.approvalId);
      return {
        atMs,
        who: String(d.requestedBy ?? 'functions'),
        kind: 'action',
        what: 'Approval Requested',
        text: `${id} (expires ${String(d.expiresAt)}): gpu-reflex approve ${id}, or "approve ${id}" in chat`,
        ...(d.summary ? { why: String(d.summary) } : {}),
      };
    }
    case 'Approval Decided': {
      const by = d.decidedBy as { platform?: string; name?: string; id?: string } | undefined;
      const who = by ? ` by ${by.name ?? by.id} (${by.platform})` : '';
      return {
        atMs,
        who: 'approvals',
        kind: 'action',
        what: 'Approval Decided',
        text: `${String(d.approvalId)} ${String(d.decision)}${who}`,
      };
    }
    case 'Quota Rewritten': {
      const changes = (d.changes as { resource: string; from: string | null; to: string | null }[] | undefined) ?? [];
      const text = `${String(d.namespace)}: ${changes
        .map((c) => `${c.resource} ${c.from ?? 'unset'} → ${c.to ?? 'unset'}`)
        .join(', ')}${d.dryRun ? ' [dry run]' : ''}`;
      return {
        atMs,
        who: 'rewrite-quotas',
        kind: 'action',
        what: 'Quota Rewritten',
        text,
        ...(d.reason ? { why: String(d.reason) } : {}),
      };
    }
    case 'GPU Idle Allocation': {
      const pod = d.pod as { namespace?: string; name?: string } | undefined;
      const hours = (Number(d.idleSeconds) / 3600).toFixed(1);
      const cost = d.cost as { amount?: number; currency?: string } | undefined;
      const spent = cost?.amount !== undefined ? `, ${cost.amount.toFixed(2)} ${String(cost.currency)}` : '';
      return {
        atMs,
        who: 'idle-gpus',
        kind: 'action',
        what: 'GPU Idle Allocation',
        text: `${String(d.state)}: ${pod?.namespace}/${pod?.name} on ${String(d.node)}, ${hours} h idle${spent}${
          d.dryRun ? ' [dry run]' : ''
        }`,
        ...(d.reason ? { why: String(d.reason) } : {}),
      };
    }
    case 'Node Labels Changed': {
      const changes = (d.changes as { key: string; from: string | null; to: string | null }[] | undefined) ?? [];
      const left = (d.leftAlone as { key: string; value: string | null }[] | undefined) ?? [];
      const text =
        `${String(d.node)}: ` +
        `${changes.map((c) => `${c.key} ${c.from ?? 'unset'} → ${c.to ?? 'unset'}`).join(', ')}` +
        `${left.length ? `; left alone: ${left.map((l) => `${l.key}=${l.value ?? 'unset'}`).join(', ')}` : ''}` +
        `${d.dryRun ? ' [dry run]' : ''}`;
      return {
        atMs,
        who: 'label-nodes',
        kind: 'action',
        what: 'Node Labels Changed',
        text,
        ...(d.reason ? { why: String(d.reason) } : {}),
      };
    }
    case 'GPU Pool Scaled': {
      const cost = d.hourlyCostDelta as { amount?: number; currency?: string } | undefined;
      const grow = Number(d.to) >= Number(d.from);
      const what =
        d.state === 'requested'
          ? grow
            ? 'grow'
            : 'shrink'
          : d.state === 'succeeded'
            ? grow
              ? 'grown'
              : 'shrunk'
            : d.state === 'failed'
              ? `failed to ${grow ? 'grow' : 'shrink'}`
              : String(d.state);
      const price =
        cost?.amount === undefined
          ? ''
          : ` (${cost.amount < 0 ? '−' : '+'}${Math.abs(cost.amount)} ${cost.currency ?? ''}/h)`;
      const text =
        `node pool ${String(d.nodepoolName ?? d.nodepoolId)} ${what} ${String(d.from)} ` +
        `→ ${String(d.to)}${price}${d.dryRun ? ' [dry run]' : ''}`;
      return {
        atMs,
        who: 'autoscale-pools',
        kind: d.state === 'failed' ? 'failure' : 'action',
        what: 'GPU Pool Scaled',
        text,
        ...(d.state !== 'succeeded' && d.reason ? { why: String(d.reason) } : {}),
      };
    }
    default: {
      // Any other detail-type: the fields most details share, so a new event type reads sensibly.
      const fromFunctions = e.source.endsWith('.functions');
      const said = [d.action, d.phase, d.reason ?? d.message ?? d.summary]
        .filter((x) => typeof x === 'string')
        .join(' ');
      const text = said.length > 200 ? `${said.slice(0, 199)}…` : said || String(d.eventId ?? '');
      return {
        atMs,
        who: fromFunctions ? 'functions' : node,
        kind: fromFunctions ? 'action' : 'event',
        what: e['detail-type'],
        text: `${typeof d.node === 'string' && fromFunctions ? `${d.node}: ` : ''}${text}`,
      };
    }
  }
}
