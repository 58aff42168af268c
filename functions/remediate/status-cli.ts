/**
 * `gpu-reflex status --kubeconfig F`: every node gpu-reflex holds, read from what remediation
 * writes and chat's `status` reads — the node's state label (lib/node-state.ts), its history
 * annotation (core/state.ts) — and the approval store (lib/approvals.ts), which
 * `approvals list` and chat's `approve ID` read. Reads only: no write goes through these ports.
 */
import { parseArgs } from 'node:util';
import { untilSignal, UsageError, type CliIo, type Command } from '../../events/cli-kit/command.ts';
import { readInputText } from '../../events/cli-kit/input.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { NodeOps, StateStore } from '../adapters/kube/ports.ts';
import type { ApprovalRecord } from '../lib/approvals.ts';
import { STATE_LABEL } from '../lib/node-state.ts';
import { isOpen, parseNodeState, type Incident } from './core/state.ts';

const HELP = [
  'Usage: gpu-reflex status --kubeconfig FILE [--namespace NS] [--json] [--watch SECONDS]',
  '',
  'Shows every node gpu-reflex holds: its state (the gpu-reflex.io/state label), the GPU(s)',
  'concerned, why, since when, the next step, the approvals waiting for a person with their IDs',
  '(decide them with `gpu-reflex approve ID` or `approve ID` in chat), and each fence with whether',
  "the node's allocatable showed it holding (verified) or not yet. A node is held when its state",
  'is other than healthy or an open incident of its history keeps GPUs out. Reads only: it',
  'writes nothing to the cluster. Exit code 0 whether or not nodes are held.',
  '  --kubeconfig FILE  the cluster to read (required)',
  '  --namespace NS     where the approval store lives (ConfigMap gpu-reflex-state-approvals;',
  '                     default gpu-reflex)',
  '  --json             one JSON array: per node its state, incidents, fences and open approvals',
  '  --watch SECONDS    read again every SECONDS (1-3600) until Ctrl-C, each read under a line',
  '                     with its time; a failed read is said and the next one tried',
].join('\n');

export interface HeldIncident {
  gpu?: string;
  why: string;
  phase: Incident['phase'];
  since: string;
  action: Incident['action'];
  fence?: { backend: string; verifiedAt?: string; driftAt?: string; fallback?: string };
}

export interface HeldNode {
  node: string;
  state: string;
  cordoned: boolean;
  gpus: string[];
  incidents: HeldIncident[];
  approvals: { id: string; action: string; scope: string; expiresAt: string }[];
  next: string;
}

function why(i: Incident): string {
  const base = i.xid !== undefined ? `XID ${i.xid}` : i.condition ? i.condition : i.trigger;
  return i.count > 1 ? `${base} ×${i.count}` : base;
}

function fenceWords(f: HeldIncident['fence']): string {
  if (!f) return '';
  const held = f.driftAt
    ? `NOT holding since ${f.driftAt}`
    : f.verifiedAt
      ? `verified ${f.verifiedAt}`
      : 'not verified yet';
  return `${f.backend}${f.fallback ? `→${f.fallback}` : ''} ${held}`;
}

function nextStep(state: string, open: HeldNode['approvals'], incidents: HeldIncident[]): string {
  if (open.length > 0) return open.map((a) => `gpu-reflex approve ${a.id}`).join(' or ');
  if (state === 'awaiting-approval') return 'an approval is asked, none open in the store: look at approvals list';
  if (state === 'awaiting-repair') return 'repair the node (or let its pool repair it), then gpu-reflex restores it';
  if (state === 'draining') return 'gpu-reflex drains it; then it waits for repair';
  const unverified = incidents.find((i) => i.fence && !i.fence.verifiedAt);
  if (unverified) return 'gpu-reflex verifies the fence, then repairs the GPU';
  return 'gpu-reflex repairs and probes the GPU, then restores it';
}

/** The held nodes, by name; `approvals` are the store's records (every status: open ones are kept). */
export function heldNodes(nodes: readonly NodeInfo[], approvals: readonly ApprovalRecord[]): HeldNode[] {
  const openBy = new Map<string, ApprovalRecord[]>();
  for (const a of approvals) if (a.status === 'open') openBy.set(a.node, [...(openBy.get(a.node) ?? []), a]);
  const out: HeldNode[] = [];
  for (const n of [...nodes].sort((a, b) => a.name.localeCompare(b.name))) {
    const s = parseNodeState(n.annotations, n.labels, n.taints, { unschedulable: n.unschedulable });
    const incidents = s.incidents
      // An observed fault holds nothing: only incidents that took GPUs or the node out, or wait to.
      .filter((i) => isOpen(i) && !i.closedAt && i.phase !== 'observing')
      .map((i): HeldIncident => ({
        ...((i.qid ?? i.gpu) ? { gpu: i.qid ?? i.gpu } : {}),
        why: why(i),
        phase: i.phase,
        since: i.since,
        action: i.action,
        ...(i.fence
          ? {
              fence: {
                backend: i.fence.backend,
                ...(i.fence.verifiedAt ? { verifiedAt: i.fence.verifiedAt } : {}),
                ...(i.fence.driftAt ? { driftAt: i.fence.driftAt } : {}),
                ...(i.fence.fallback ? { fallback: i.fence.fallback } : {}),
              },
            }
          : {}),
      }));
    const label = n.labels[STATE_LABEL];
    const open = (openBy.get(n.name) ?? []).map((a) => ({
      id: a.id,
      action: a.action,
      scope: a.scope,
      expiresAt: a.expiresAt,
    }));
    const held = (label !== undefined && label !== 'healthy') || s.quarantinedGpus.length > 0 || open.length > 0;
    if (!held) continue;
    const state = label ?? s.phase;
    out.push({
      node: n.name,
      state,
      cordoned: n.unschedulable,
      gpus: [...new Set([...s.quarantinedGpus, ...incidents.flatMap((i) => (i.gpu ? [i.gpu] : []))])],
      incidents,
      approvals: open,
      next: nextStep(state, open, incidents),
    });
  }
  return out;
}

/** Reads the cluster: the nodes as chat's `status` lists them, the approvals as `approvals list`. */
export async function readHeldNodes(p: { nodes: NodeOps; state: StateStore }): Promise<HeldNode[]> {
  const { listApprovals } = await import('../lib/approvals.ts');
  const [nodes, approvals] = await Promise.all([p.nodes.list(), listApprovals(p.state)]);
  return heldNodes(nodes, approvals);
}

const COLUMNS = ['NODE', 'STATE', 'GPU', 'WHY', 'SINCE', 'FENCE', 'APPROVAL', 'NEXT'] as const;

export function statusTable(held: readonly HeldNode[]): string[] {
  if (held.length === 0) return ['no node is held by gpu-reflex'];
  const rows: string[][] = [];
  for (const h of held) {
    const lines = Math.max(1, h.incidents.length, h.approvals.length);
    for (let k = 0; k < lines; k++) {
      const i = h.incidents[k];
      const a = h.approvals[k];
      rows.push([
        k === 0 ? h.node : '',
        k === 0 ? `${h.state}${h.cordoned ? ',cordoned' : ''}` : '',
        i?.gpu ?? (k === 0 && h.gpus.length === 0 ? 'node' : (h.gpus[k] ?? '')),
        i ? `${i.why} (${i.action}, ${i.phase})` : '',
        i?.since ?? '',
        fenceWords(i?.fence) || (i ? 'none' : ''),
        a ? `${a.id} (${a.action}, expires ${a.expiresAt})` : k === 0 ? 'none' : '',
        k === 0 ? h.next : '',
      ]);
    }
  }
  const width = COLUMNS.map((c, j) => Math.max(c.length, ...rows.map((r) => r[j]!.length)));
  const line = (r: readonly string[]) =>
    r
      .map((c, j) => c.padEnd(width[j]!))
      .join('  ')
      .trimEnd();
  return [line(COLUMNS), ...rows.map(line)];
}

/** Waits `ms` between --watch reads; resolves false when the command should stop (Ctrl-C). */
export type WatchWait = (ms: number) => Promise<boolean>;

const waitOrSignal: WatchWait = (ms) => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), ms))),
    untilSignal().then(() => false),
  ]).finally(() => clearTimeout(timer));
};

export function createStatusCommand(wait: WatchWait = waitOrSignal, now: () => Date = () => new Date()): Command {
  return {
    path: ['status'],
    summary: 'show every node gpu-reflex holds: state, GPU, why, since when, fences, approvals waiting (reads only)',
    help: HELP,
    async run(args: string[], io: CliIo): Promise<number> {
      const { values, positionals } = parseArgs({
        args,
        options: {
          kubeconfig: { type: 'string' },
          namespace: { type: 'string' },
          json: { type: 'boolean' },
          watch: { type: 'string' },
        },
        allowPositionals: true,
        strict: true,
      });
      if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
      if (!values.kubeconfig) throw new UsageError('--kubeconfig FILE is required: status reads the cluster');
      const every = values.watch === undefined ? undefined : Number(values.watch);
      if (every !== undefined && !(Number.isInteger(every) && every >= 1 && every <= 3600))
        throw new UsageError(`--watch takes whole seconds from 1 to 3600, not ${JSON.stringify(values.watch)}`);
      await readInputText(values.kubeconfig, '--kubeconfig', io);
      const { kubePorts, loadKubeConfig } = await import('../adapters/kube/client.ts');
      const ports = kubePorts(loadKubeConfig({ kubeconfigPath: values.kubeconfig }), {
        namespace: values.namespace ?? 'gpu-reflex',
      });
      const show = (held: HeldNode[]) => {
        if (values.json) io.out(JSON.stringify(held, null, 2));
        else for (const l of statusTable(held)) io.out(l);
      };
      if (every === undefined) {
        show(await readHeldNodes(ports));
        return 0;
      }
      do {
        io.out(`--- ${now().toISOString()}`);
        try {
          show(await readHeldNodes(ports));
        } catch (err) {
          // One failed read (the API server restarting) does not end a watch: the next read may work.
          io.err(`status: this read failed (${err instanceof Error ? err.message : String(err)}); trying again`);
        }
      } while (await wait(every * 1000));
      return 0;
    },
  };
}

export const statusCommand: Command = createStatusCommand();
