/**
 * `gpu-reflex remediate reset-support`: prints the reset support matrix (core/reset-support.ts), or
 * its answer for one node's labels. Changes nothing, reads no cluster.
 */
import { UsageError, type Command } from '../events/cli-kit/command.ts';
import { parseFlags } from '../events/cli-kit/flags.ts';
import {
  GPU_PRODUCT_LABEL,
  GPU_TOPOLOGY_LABEL,
  RESET_SUPPORT,
  resetSupportOf,
  skipsReset,
} from '../functions/remediate/core/reset-support.ts';

export const resetSupportCommand: Command = {
  path: ['remediate', 'reset-support'],
  summary: 'print where NVIDIA supports resetting one GPU (SKU × topology), each row with its source',
  help: [
    'Usage: gpu-reflex remediate reset-support [--product NAME] [--topology pcie|nvlink|nvswitch] [--json]',
    '',
    'Prints the matrix the remediation follows: where a single-GPU reset is `unsupported` or NVIDIA resets',
    'the GPUs only `all-gpus` together, a GPU that needs a reset goes straight to a node reboot, no reset',
    'tried, and the Remediation says why. A SKU or topology without a row: the reset is tried, and',
    "NVML's refusal climbs to the reboot like any failed reset.",
    `  --product NAME      a ${GPU_PRODUCT_LABEL} value (GFD), e.g. NVIDIA-A100-SXM4-80GB: its verdict only`,
    `  --topology T        the node's ${GPU_TOPOLOGY_LABEL} label (with --product)`,
    '  --json              the rows (or the answer) as JSON',
  ].join('\n'),
  async run(args, io) {
    const values = parseFlags(args, {
      product: { type: 'string' },
      topology: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.topology !== undefined && values.product === undefined)
      throw new UsageError('--topology needs --product');
    if (values.product !== undefined) {
      const labels: Record<string, string> = { [GPU_PRODUCT_LABEL]: values.product };
      if (values.topology !== undefined) labels[GPU_TOPOLOGY_LABEL] = values.topology;
      const s = resetSupportOf(labels);
      if (values.json) io.out(JSON.stringify(s, null, 2));
      else
        io.out(
          `${s.product} on ${s.topology ?? 'unknown topology'}: ${s.verdict ?? 'no row (the reset is tried)'}` +
            `${skipsReset(s) ? ' → node reboot, no reset tried' : ''}${s.row ? ` — ${s.row.source}` : ''}`,
        );
      return 0;
    }
    if (values.json) {
      io.out(JSON.stringify(RESET_SUPPORT, null, 2));
      return 0;
    }
    const rows = RESET_SUPPORT.map((r) => [r.family, r.topology, r.verdict, r.systems, r.source]);
    const head = ['family', 'topology', 'verdict', 'systems', 'source'];
    const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) =>
      r
        .map((c, i) => (i < r.length - 1 ? c.padEnd(width[i]!) : c))
        .join('  ')
        .trimEnd();
    io.out(line(head));
    for (const r of rows) io.out(line(r));
    return 0;
  },
};
