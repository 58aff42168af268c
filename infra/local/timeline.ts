import type { EventEnvelope } from './bus/index.ts';
import { describeXid } from '../../events/xid.ts';

/**
 * The live timeline of the local stack: one line per thing a component did, in the order it
 * happened, stamped with scenario time. Entries come only from what was observed — events the bus
 * accepted, its deliveries and failures, Remediation events the functions published, and changes
 * the cluster stored — never from what the scenario intended. Pure formatting; the stack collects.
 */
export type EntryKind = 'event' | 'action' | 'failure' | 'cluster' | 'gap' | 'note' | 'stack';

export interface TimelineEntry {
  /** Milliseconds since the scenario started. */
  atMs: number;
  /** Who: a node name, a function name, `cluster`, `scenario`, `stack`. */
  who: string;
  kind: EntryKind;
  /** Detail-type for events; short label otherwise. */
  what: string;
  text: string;
}

const COLOURS: Record<EntryKind, string> = { event: '36', action: '32', failure: '31', cluster: '33', gap: '35', note: '2', stack: '2' };

/** `00:08.2` */
export function clockText(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  const m = Math.floor(s / 60);
  return `${String(m).padStart(2, '0')}:${(s - m * 60).toFixed(1).padStart(4, '0')}`;
}

export function formatEntry(e: TimelineEntry, colour: boolean): string {
  const line = `${clockText(e.atMs)}  ${e.who.padEnd(14)}  ${e.what ? `${e.what}  ` : ''}${e.text}`;
  return colour ? `\u001b[${COLOURS[e.kind]}m${line}\u001b[0m` : line;
}

type PodName = (uid: string) => string | undefined;

function podsText(pods: unknown, name: PodName): string {
  if (!Array.isArray(pods) || pods.length === 0) return '';
  const names = pods.map((p: { uid?: string; namespace?: string; name?: string }) => (p.name ? `${p.namespace}/${p.name}` : (p.uid && name(p.uid)) || p.uid || '?'));
  return `, pods ${names.slice(0, 4).join(', ')}${names.length > 4 ? ` +${names.length - 4}` : ''}`;
}

interface Step { kind: string; target: string; result: string; message?: string }

/** `drain-node acted: tainted, cordoned, evicting 2 pods (reason ...)` */
function remediationText(d: Record<string, unknown>): string {
  const steps = (d.steps as Step[] | undefined) ?? [];
  const done = (k: string) => steps.filter((s) => s.kind === k && (s.result === 'done' || s.result === 'already'));
  const parts: string[] = [];
  if (done('taint').length) parts.push('tainted');
  if (done('cordon').length) parts.push('cordoned');
  const evicted = done('evict').length;
  const blocked = steps.filter((s) => s.kind === 'evict' && s.result === 'blocked').length;
  if (evicted) parts.push(`evicting ${evicted} pod${evicted === 1 ? '' : 's'}`);
  if (blocked) parts.push(`${blocked} eviction${blocked === 1 ? '' : 's'} blocked by a disruption budget`);
  for (const k of ['uncordon', 'untaint', 'reboot', 'replace', 'notify', 'approval']) if (done(k).length) parts.push(k);
  if (steps.some((s) => s.result === 'dry-run')) parts.push('dry run');
  const failed = steps.filter((s) => s.result === 'failed');
  if (failed.length) parts.push(`${failed.length} step${failed.length === 1 ? '' : 's'} failed`);
  const reason = String(d.reason ?? '');
  return `${String(d.action)} ${String(d.phase)}${parts.length ? `: ${parts.join(', ')}` : ''} (${reason.length > 160 ? `${reason.slice(0, 159)}…` : reason})`;
}

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
      return { atMs, who: node, kind: 'event', what: 'GPU XID Error', text: `XID ${xid} (${describeXid(xid).meaning})${onGpu}${mig ? ` instance ${mig.gpuInstanceId}` : ''} via ${String(d.via)}${podsText(d.pods, podName)}` };
    }
    case 'GPU Health Changed':
      return { atMs, who: node, kind: 'event', what: 'GPU Health Changed', text: `${String(d.condition)} ${String(d.state)} (${String(d.severity)})${onGpu}: ${String(d.message ?? '')}${podsText(d.pods, podName)}` };
    case 'GPU Inventory': {
      const gpus = (d.gpus as { name?: string; processes?: { podUid?: string }[] }[] | undefined) ?? [];
      const pods = new Set(gpus.flatMap((g) => (g.processes ?? []).map((p) => p.podUid).filter(Boolean)));
      return { atMs, who: node, kind: 'event', what: 'GPU Inventory', text: `${gpus.length} × ${gpus[0]?.name ?? 'GPU'}, ${pods.size} pod${pods.size === 1 ? '' : 's'} on them` };
    }
    case 'GPU Utilization Summary': {
      const gpus = (d.gpus as { utilPercent?: { avg?: number } }[] | undefined) ?? [];
      const avg = gpus.length ? gpus.reduce((a, g) => a + (g.utilPercent?.avg ?? 0), 0) / gpus.length : 0;
      return { atMs, who: node, kind: 'event', what: 'GPU Utilization Summary', text: `${gpus.length} GPUs, ${String(d.samples)} samples, average utilization ${avg.toFixed(0)}%` };
    }
    case 'Remediation':
      return { atMs, who: 'remediate', kind: 'action', what: '', text: remediationText(d) };
    default: {
      // Any other detail-type: the fields most details share, so a new event type reads sensibly.
      const fromFunctions = e.source.endsWith('.functions');
      const said = [d.action, d.phase, d.reason ?? d.message ?? d.summary].filter((x) => typeof x === 'string').join(' ');
      const text = said.length > 200 ? `${said.slice(0, 199)}…` : said || String(d.eventId ?? '');
      return { atMs, who: fromFunctions ? 'functions' : node, kind: fromFunctions ? 'action' : 'event', what: e['detail-type'], text: `${typeof d.node === 'string' && fromFunctions ? `${d.node}: ` : ''}${text}` };
    }
  }
}

/** What the summary counts. Built by the stack from what it observed; printed and put in the report. */
export interface Summary {
  eventsByDetailType: Record<string, number>;
  actionsByKind: Record<string, number>;
  nodesCordoned: string[];
  nodesTainted: string[];
  nodesQuarantined: string[];
  podsEvicted: number;
  podsRescheduled: number;
  podsPending: Record<string, number>;
  deliveryFailures: Record<string, number>;
  deadLetters: number;
  expectations?: { check: string; ok: boolean; detail: string }[];
}

const list = (xs: string[]) => (xs.length ? xs.join(', ') : 'none');
const counts = (r: Record<string, number>) => (Object.keys(r).length ? Object.entries(r).map(([k, v]) => `${k} ${v}`).join(', ') : 'none');

export function formatSummary(s: Summary): string[] {
  const lines = [
    'Summary',
    `  events:            ${counts(s.eventsByDetailType)}`,
    `  actions:           ${counts(s.actionsByKind)}`,
    `  nodes cordoned:    ${list(s.nodesCordoned)}`,
    `  nodes tainted:     ${list(s.nodesTainted)}`,
    `  GPUs quarantined:  ${list(s.nodesQuarantined)}`,
    `  pods evicted:      ${s.podsEvicted}, rescheduled: ${s.podsRescheduled}, pending: ${counts(s.podsPending)}`,
    `  delivery failures: ${counts(s.deliveryFailures)}`,
    `  dead letters:      ${s.deadLetters}`,
  ];
  for (const x of s.expectations ?? []) lines.push(`  expect ${x.ok ? 'PASS' : 'FAIL'}  ${x.check}: ${x.detail}`);
  return lines;
}
