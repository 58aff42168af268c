/**
 * `gpu-reflex status --kubeconfig F`: every node gpu-reflex holds, read from what remediation
 * writes and chat's `status` reads — the node's state label (lib/node-state.ts), its history
 * annotation (core/state.ts) — and the approval store (lib/approvals.ts), which
 * `approvals list` and chat's `approve ID` read. Reads only: no write goes through these ports.
 */
import { untilSignal, UsageError, type CliIo, type Command } from '../../events/cli-kit/command.ts';
import { parseFlags } from '../../events/cli-kit/flags.ts';
import { readInputText } from '../../events/cli-kit/input.ts';
import { fenceWords, readHeldNodes, type HeldNode } from './held.ts';

export { heldNodes, readHeldNodes, type HeldIncident, type HeldNode } from './held.ts';

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
      const values = parseFlags(args, {
        kubeconfig: { type: 'string' },
        namespace: { type: 'string' },
        json: { type: 'boolean' },
        watch: { type: 'string' },
      });
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
