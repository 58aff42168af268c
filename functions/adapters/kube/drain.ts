/**
 * Draining a node (or only the pods on some of its GPUs) through the ports, so the same code runs
 * against the real cluster, the simulated one, and the fakes.
 *
 * `drainOnce` is one pass: cordon, list the node's pods, evict what is selected, report. `drain`
 * repeats passes on an injected clock until nothing selected is left or the deadline passes. A
 * scheduled sweep calls `drainOnce` once a minute instead; tests step the clock and never sleep.
 *
 * Pods are only ever evicted (the Eviction API), never deleted, so PodDisruptionBudgets hold and
 * each pod gets its own terminationGracePeriodSeconds. DaemonSet pods (their controller ignores
 * cordons and would recreate them) and mirror pods (static manifests; the API cannot remove them)
 * are skipped, as `kubectl drain --ignore-daemonsets` does.
 */
import type { Clock } from '../clock.ts';
import { isRetryable } from '../errors.ts';
import { evictionsNote } from './event-notes.ts';
import { MIRROR_POD_ANNOTATION, podKey } from './model.ts';
import type { PodInfo } from './model.ts';
import type { EventRecorder, KubeEventNote, NodeOps, PodOps } from './ports.ts';

export interface DrainPorts {
  nodes: NodeOps;
  pods: PodOps;
  /** Where a drain that ran out of time is recorded (`DrainStuck`); nowhere when omitted. */
  events?: EventRecorder;
}

export interface DrainPassOptions {
  /** Selects the pods to evict (e.g. only those on the failing GPU); every pod when omitted. */
  podFilter?: (pod: PodInfo) => boolean;
  /** Cordon the node first so evicted pods do not land back on it. Default true. */
  cordon?: boolean;
}

export type SkipReason = 'daemonset' | 'mirror';

export interface DrainPassReport {
  node: string;
  /** Pods whose eviction was accepted (in this pass; `drain` accumulates over passes). */
  evicted: string[];
  /** Pods the API refused to evict for now (PodDisruptionBudget, throttling, server trouble). */
  blocked: { pod: string; reason: string }[];
  /** Selected pods that drain leaves alone by design. */
  skipped: { pod: string; reason: SkipReason }[];
  /** Selected pods already shutting down, waiting out their grace period. */
  terminating: string[];
  /** Selected pods still on the node after this pass (blocked, terminating, just evicted). */
  remaining: string[];
  /** True when no selected pod (other than skipped ones) is left on the node. */
  done: boolean;
}

export function skipReason(pod: PodInfo): SkipReason | undefined {
  if (pod.annotations[MIRROR_POD_ANNOTATION] !== undefined) return 'mirror';
  if (pod.owners.some((o) => o.kind === 'DaemonSet')) return 'daemonset';
  return undefined;
}

export async function drainOnce(
  ports: DrainPorts,
  node: string,
  options: DrainPassOptions = {},
): Promise<DrainPassReport> {
  if (options.cordon ?? true) await ports.nodes.cordon(node);
  const pods = await ports.pods.listOnNode(node);
  const report: DrainPassReport = {
    node,
    evicted: [],
    blocked: [],
    skipped: [],
    terminating: [],
    remaining: [],
    done: false,
  };
  const filter = options.podFilter ?? (() => true);

  for (const pod of pods) {
    if (!filter(pod)) continue;
    const key = podKey(pod);
    const skip = skipReason(pod);
    if (skip !== undefined) {
      report.skipped.push({ pod: key, reason: skip });
      continue;
    }
    if (pod.terminating) {
      report.terminating.push(key);
      report.remaining.push(key);
      continue;
    }
    try {
      const res = await ports.pods.evict(pod.namespace, pod.name);
      if (res.outcome === 'gone') continue;
      if (res.outcome === 'evicted') report.evicted.push(key);
      else report.blocked.push({ pod: key, reason: res.reason });
      report.remaining.push(key);
    } catch (err) {
      // One pod's transient trouble must not stop the others; the next pass retries it.
      // Anything else (RBAC forbidden, bad input) is a misconfiguration and stops the drain.
      if (!isRetryable(err)) throw err;
      report.blocked.push({ pod: key, reason: err instanceof Error ? err.message : String(err) });
      report.remaining.push(key);
    }
  }
  report.done = report.remaining.length === 0;
  if (report.evicted.length > 0)
    await ports.events?.record({ kind: 'Node', name: node }, evictionsNote(report.evicted));
  return report;
}

export interface DrainOptions extends DrainPassOptions {
  /** Give up after this much clock time; the report then says what is left. */
  deadlineMs: number;
  clock: Clock;
  /** Pause between passes. Default 5 s. */
  intervalMs?: number;
}

export interface DrainReport extends DrainPassReport {
  /** How many passes ran. */
  passes: number;
  /** Clock time the drain took. */
  elapsedMs: number;
}

/**
 * Passes until done or the deadline. The last pass runs at the deadline, so the report is what is
 * left then. `evicted` accumulates over passes; the other lists are the last pass's view.
 */
export async function drain(ports: DrainPorts, node: string, options: DrainOptions): Promise<DrainReport> {
  const { clock, deadlineMs } = options;
  const interval = options.intervalMs ?? 5_000;
  if (!(interval > 0)) throw new RangeError(`drain intervalMs must be > 0, got ${interval}`);
  const start = clock.now();
  const deadline = start + deadlineMs;
  const evicted = new Set<string>();
  for (let passes = 1; ; passes++) {
    const pass = await drainOnce(ports, node, options);
    for (const p of pass.evicted) evicted.add(p);
    const now = clock.now();
    if (pass.done || now >= deadline) {
      if (!pass.done) await ports.events?.record({ kind: 'Node', name: node }, stuckNote(pass, passes, now - start));
      return { ...pass, evicted: [...evicted], passes, elapsedMs: now - start };
    }
    await clock.sleep(Math.min(interval, deadline - now));
  }
}

/** A Warning a person reads in `kubectl describe node`: what is left and why. */
function stuckNote(pass: DrainPassReport, passes: number, elapsedMs: number): KubeEventNote {
  const why = pass.blocked.map((b) => `${b.pod} (${b.reason})`);
  const waiting = pass.terminating.map((p) => `${p} (terminating)`);
  return {
    type: 'Warning',
    reason: 'DrainStuck',
    action: 'Drain',
    note:
      `Drain gave up after ${passes} passes in ${Math.round(elapsedMs / 1000)}s with ${pass.remaining.length} ` +
      `pod(s) left: ${[...why, ...waiting].join(', ')}`,
  };
}

/** podFilter: pods named `namespace/name` (from the agent's GPU → pod inventory). */
export function podsNamed(keys: Iterable<string>): (pod: PodInfo) => boolean {
  const set = new Set(keys);
  return (pod) => set.has(podKey(pod));
}

/**
 * podFilter: pods asking for any of these extended resources, e.g. `['nvidia.com/mig-1g.10gb']`
 * to clear one MIG profile, or `['nvidia.com/gpu']` for every GPU pod.
 */
export function podsRequesting(resources: readonly string[]): (pod: PodInfo) => boolean {
  return (pod) => resources.some((r) => (pod.extendedResources[r] ?? 0) > 0);
}
