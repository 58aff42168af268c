import type { EscalationProgress } from '../../functions/remediate/core/escalation.ts';
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
  /** Why it happened (a remediation's reason): printed whole, wrapped on indented lines below. */
  why?: string;
}

const COLOURS: Record<EntryKind, string> = {
  event: '36',
  action: '32',
  failure: '31',
  cluster: '33',
  gap: '35',
  note: '2',
  stack: '2',
};

/** The line that starts a run: how long, on which clock, and how it ends. */
export function runningText(durationMs: number, clock: 'wall' | 'virtual'): string {
  if (clock === 'virtual') return `running ${durationMs / 1000}s of scenario on the virtual clock`;
  if (!Number.isFinite(durationMs)) return 'running until Ctrl-C, on the wall clock';
  return `running ${durationMs / 1000}s of scenario on the wall clock (Ctrl-C ends it)`;
}

/** Where the simulated cluster's kubeconfig is, so a user can look at it while the stack runs. */
export function kubeconfigText(path: string): string {
  return `  kubeconfig: ${path} (while it runs: kubectl --kubeconfig ${path} get nodes,pods -A)`;
}

/** `00:08.2` */
export function clockText(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  const m = Math.floor(s / 60);
  return `${String(m).padStart(2, '0')}:${(s - m * 60).toFixed(1).padStart(4, '0')}`;
}

/** Width a timeline line is wrapped to; the time and who columns take the first 25. */
export const LINE_WIDTH = 100;
const INDENT = ' '.repeat(25);

/** Words of `text` in lines of at most `width` (a longer word gets a line of its own). */
export function wrapWords(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** The entry's line, then its `why` in full on indented lines (`why: …`), never cut. */
export function formatEntry(e: TimelineEntry, colour: boolean): string {
  const lines = [`${clockText(e.atMs)}  ${e.who.padEnd(14)}  ${e.what ? `${e.what}  ` : ''}${e.text}`];
  if (e.why) {
    const wrapped = wrapWords(e.why, LINE_WIDTH - INDENT.length - 5);
    wrapped.forEach((l, i) => lines.push(`${INDENT}${i === 0 ? 'why: ' : '     '}${l}`));
  }
  return lines.map((line) => (colour ? `\u001b[${COLOURS[e.kind]}m${line}\u001b[0m` : line)).join('\n');
}

type PodName = (uid: string) => string | undefined;

function podsText(pods: unknown, name: PodName): string {
  if (!Array.isArray(pods) || pods.length === 0) return '';
  const names = pods.map((p: { uid?: string; namespace?: string; name?: string }) =>
    p.name ? `${p.namespace}/${p.name}` : (p.uid && name(p.uid)) || p.uid || '?',
  );
  return `, pods ${names.slice(0, 4).join(', ')}${names.length > 4 ? ` +${names.length - 4}` : ''}`;
}

interface Step {
  kind: string;
  target: string;
  result: string;
  message?: string;
}

/**
 * What a dry run's step would have done, in the conditional's bare verb. Labels and annotations are
 * bookkeeping; a notice is left out, as the dry run's notifier answers whether or not a chat is set.
 */
const WOULD_STEP: Record<string, string> = {
  taint: 'taint',
  untaint: 'untaint',
  cordon: 'cordon',
  uncordon: 'uncordon',
  fence: 'fence',
  unfence: 'unfence',
  reboot: 'reboot',
  replace: 'replace',
  approval: 'ask for approval',
};
/** A dry run's phase, said as what the live run would be doing. */
const WOULD_PHASE: Record<string, string> = {
  acted: 'would act',
  partial: 'would act in part',
  'awaiting-approval': 'would wait for approval',
  'awaiting-repair': 'would wait for repair',
  restored: 'would restore',
  decided: 'would decide',
};

/**
 * A dry run's Remediation: `drain-node would act: taint, cordon, evict 2 pods (dry run: nothing
 * changed)`, never "acted", since nothing was done.
 */
function wouldText(d: Record<string, unknown>, steps: Step[]): string {
  const kinds = [...new Set(steps.filter((s) => s.result === 'dry-run').map((s) => s.kind))];
  const evict = steps.filter((s) => s.kind === 'evict' && s.result === 'dry-run').length;
  const verbs = kinds.flatMap((k) =>
    k === 'evict' ? [`evict ${evict} pod${evict === 1 ? '' : 's'}`] : WOULD_STEP[k] ? [WOULD_STEP[k]] : [],
  );
  const phase = WOULD_PHASE[String(d.phase)] ?? String(d.phase);
  return `${String(d.action)} ${phase}${verbs.length ? `: ${verbs.join(', ')}` : ''} (dry run: nothing changed)`;
}

/** `drain-node acted: tainted, cordoned, evicting 2 pods`; the reason goes in `why`. */
function remediationText(d: Record<string, unknown>): string {
  const steps = (d.steps as Step[] | undefined) ?? [];
  if (d.dryRun === true) return wouldText(d, steps);
  const done = (k: string) => steps.filter((s) => s.kind === k && (s.result === 'done' || s.result === 'already'));
  const parts: string[] = [];
  if (done('taint').length) parts.push('tainted');
  if (done('cordon').length) parts.push('cordoned');
  const evicted = done('evict').length;
  const blocked = steps.filter((s) => s.kind === 'evict' && s.result === 'blocked').length;
  if (evicted) parts.push(`evicting ${evicted} pod${evicted === 1 ? '' : 's'}`);
  if (blocked) parts.push(`${blocked} eviction${blocked === 1 ? '' : 's'} blocked by a disruption budget`);
  for (const k of ['uncordon', 'untaint', 'reboot', 'replace', 'notify', 'approval']) if (done(k).length) parts.push(k);
  const failed = steps.filter((s) => s.result === 'failed');
  if (failed.length) parts.push(`${failed.length} step${failed.length === 1 ? '' : 's'} failed`);
  return `${String(d.action)} ${String(d.phase)}${parts.length ? `: ${parts.join(', ')}` : ''}`;
}

/** Average utilization where NVML reports it; MIG GPUs report none (NVML answers NOT_SUPPORTED). */
function utilizationText(d: Record<string, unknown>): string {
  type Agg = { avg?: number };
  const gpus =
    (d.gpus as { utilPercent?: Agg; framebufferUsedPercent?: Agg; migDevices?: unknown[] }[] | undefined) ?? [];
  const avg = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;
  const util = gpus.flatMap((g) => (g.utilPercent?.avg !== undefined ? [g.utilPercent.avg] : []));
  const silent = gpus.filter((g) => g.utilPercent?.avg === undefined);
  const head = `${gpus.length} GPU${gpus.length === 1 ? '' : 's'}, ${String(d.samples)} samples`;
  const parts: string[] = [];
  if (util.length)
    parts.push(`average utilization ${avg(util).toFixed(0)}%${silent.length ? ` on ${util.length}` : ''}`);
  if (silent.length) {
    // What NVML does give with MIG on: memory per instance. An instance with memory in use is busy.
    const instances = silent.flatMap((g) => (g.migDevices ?? []) as { framebufferUsedPercent?: { max?: number } }[]);
    const busy = instances.filter((m) => (m.framebufferUsedPercent?.max ?? 0) > 0).length;
    const fb = silent.flatMap((g) =>
      g.framebufferUsedPercent?.avg !== undefined ? [g.framebufferUsedPercent.avg] : [],
    );
    const who = util.length ? ` on ${silent.length} GPU${silent.length === 1 ? '' : 's'}` : '';
    const facts = [
      ...(instances.length ? [`${busy} of ${instances.length} MIG instances in use`] : []),
      ...(fb.length ? [`framebuffer ${avg(fb).toFixed(0)}% used`] : []),
    ];
    parts.push(
      `utilization not ` +
        `reported${who}${instances.length ? ' (MIG on: NVML has none per GPU or instance)' : ''}` +
        `${facts.length ? `; ${facts.join(', ')}` : ''}`,
    );
  }
  return `${head}${parts.length ? `, ${parts.join('; ')}` : ''}`;
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

/**
 * A delivery whose function changed nothing publishes nothing, so the bus's `delivered` report is
 * the only trace: this renders the function's returned outcome (functions/lib/handler.ts
 * HandlerOutcome) as a line. Outcomes that did change something (a published Remediation) and
 * shapes it does not know give undefined: those are printed from their events.
 */
/** "2 of 3 toward escalation to restart-workload within 60 min (1 of 2 workloads)". */
export function countedText(e: EscalationProgress): string {
  const workloads =
    e.neededWorkloads > 1 ? ` (${Math.min(e.workloads, e.neededWorkloads)} of ${e.neededWorkloads} workloads)` : '';
  return (
    `${Math.min(e.seen, e.needed)} of ${e.needed} toward escalation to ${e.next} within ${e.windowMinutes} ` +
    `min${workloads}`
  );
}

export function deliveryEntry(atMs: number, fn: string, outcome: unknown): TimelineEntry | undefined {
  if (typeof outcome !== 'object' || outcome === null) return undefined;
  const o = outcome as { status?: unknown; reason?: unknown; result?: unknown };
  const line = (text: string, why?: unknown, kind: EntryKind = 'action'): TimelineEntry => ({
    atMs,
    who: fn,
    kind,
    what: '',
    text,
    ...(typeof why === 'string' && why ? { why } : {}),
  });
  if (o.status === 'dropped') return line('dropped the event: it was not acted on', o.reason, 'failure');
  if (o.status === 'already-done') return line('already done: nothing to change', o.reason);
  if (o.status !== 'done' || typeof o.result !== 'object' || o.result === null) return undefined;
  const r = o.result as {
    kind?: unknown;
    action?: unknown;
    phase?: unknown;
    reason?: unknown;
    nodes?: unknown;
    acted?: unknown;
    escalation?: EscalationProgress;
  };
  if (r.phase === 'skipped' && r.escalation)
    return line(`counted: ${countedText(r.escalation)}; ${String(r.action)} stands`, r.reason);
  if (r.phase === 'skipped') return line(`no change: ${String(r.action)} stands`, r.reason);
  if (r.acted === 0 && typeof r.nodes === 'number')
    return line(`checked ${r.nodes} node${r.nodes === 1 ? '' : 's'}: nothing to do`);
  if (typeof (r as { migNodes?: unknown }).migNodes === 'number') return migLine(r as unknown as MigOutcome, line);
  if (typeof (r as { managedPools?: unknown }).managedPools === 'number')
    return autoscaleLine(r as unknown as AutoscaleOutcome, line);
  return undefined;
}

/** autoscale-pools' outcome (functions/autoscale/handler.ts): its GPU Pool Scaled events print the rest. */
interface AutoscaleOutcome {
  managedPools: number;
  scaled?: Record<string, number>;
  finished?: Record<string, string>;
  released?: string[];
  draining?: string[];
  pending?: number;
  awaitingInFlight?: number;
  deferred?: number;
  unhostable?: number;
  /** Waiting GPU pods that are no demand (functions/autoscale/demand.ts), by why. */
  notDemand?: { gated?: number; nominated?: number; fitsExisting?: number };
  /** Idle nodes scale-in kept, with why (a pod that blocks their drain, the pool's minimum...). */
  kept?: { node: string; why: string }[];
  /** Gangs given no node, with why (functions/autoscale/core/gangs.ts). */
  gangs?: { held?: string[] };
}

function autoscaleLine(a: AutoscaleOutcome, line: (text: string) => TimelineEntry): TimelineEntry | undefined {
  if (
    a.managedPools === 0 ||
    Object.keys(a.scaled ?? {}).length > 0 ||
    Object.keys(a.finished ?? {}).length > 0 ||
    (a.released ?? []).length > 0
  )
    return undefined;
  if ((a.draining ?? []).length > 0) return line(`draining ${a.draining!.join(', ')} to give back: idle, no GPU pod`);
  const nd = a.notDemand ?? {};
  const noDemand = [
    nd.gated ? `${nd.gated} held by scheduling gates` : '',
    nd.nominated ? `${nd.nominated} nominated to a node preemption frees` : '',
    nd.fitsExisting ? `${nd.fitsExisting} fit an existing node` : '',
  ].filter(Boolean);
  const blocked = (a.kept ?? []).filter((k) => k.why.includes(' blocks '));
  if (!a.pending && noDemand.length > 0) return line(`no GPU pod to buy a node for: ${noDemand.join('; ')}`);
  if (!a.pending && blocked.length > 0)
    return line(`idle ${blocked.map((k) => `${k.node} kept: ${k.why}`).join('; ')}`);
  const parts = [
    a.awaitingInFlight ? `${a.awaitingInFlight} wait for nodes on their way` : '',
    a.deferred ? `${a.deferred} wait on pool limits (max, step or cooldown)` : '',
    a.unhostable ? `${a.unhostable} no managed pool can host` : '',
    ...(a.gangs?.held ?? []),
  ].filter(Boolean);
  if (!a.pending) return undefined;
  return line(
    `${a.pending} GPU pod${a.pending === 1 ? '' : 's'} pending: ${parts.join('; ') || 'none needs a new node'}`,
  );
}

/** rebalance-mig's outcome (functions/mig/handler.ts): its MIG Layout Change events print the rest. */
interface MigOutcome {
  migNodes: number;
  pending: number;
  satisfiedAfter: number;
  steps: Record<string, string>;
  underWay: string[];
  failed: string[];
}

function migLine(m: MigOutcome, line: (text: string) => TimelineEntry): TimelineEntry | undefined {
  const labelled = Object.entries(m.steps)
    .filter(([, k]) => k === 'label')
    .map(([n]) => n);
  if (labelled.length > 0) return line(`nvidia.com/mig.config set on ${labelled.join(', ')}: mig-manager reconfigures`);
  if (Object.keys(m.steps).length > 0) return undefined;
  const pods = `${m.pending} pod${m.pending === 1 ? '' : 's'}`;
  if (m.underWay.length > 0)
    return line(`${pods} wait for MIG instances; mig-manager is reconfiguring ${m.underWay.join(', ')}`);
  const failed = m.failed.length > 0 ? ` (${m.failed.join(', ')} left cordoned after a failed relayout)` : '';
  if (m.pending === 0)
    return line(
      `checked ${m.migNodes} MIG node${m.migNodes === 1 ? '' : 's'}: no pod waits for a MIG instance${failed}`,
    );
  return line(`${pods} wait for MIG instances: no idle GPU can be relaid for them${failed}`);
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
const counts = (r: Record<string, number>) =>
  Object.keys(r).length
    ? Object.entries(r)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')
    : 'none';

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

/**
 * The run's last line, one verdict a person can read without scrolling: PASS when every expectation
 * held, FAIL naming how many did not, or that the scenario set none (or was not judged).
 */
export function verdictLine(s: Summary): string {
  const checks = s.expectations;
  if (checks === undefined)
    return 'verdict: not judged (the scenario expects nothing, or the run ended before its end)';
  const failed = checks.filter((x) => !x.ok);
  if (failed.length === 0) return `verdict: PASS, ${checks.length} of ${checks.length} expectations hold`;
  return (
    `verdict: FAIL, ${failed.length} of ${checks.length} expectations do not hold: ` +
    failed.map((x) => x.check).join('; ')
  );
}
