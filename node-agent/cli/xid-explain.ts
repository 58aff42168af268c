/** `gpu-reflex xid explain`: what one XID means, in NVIDIA's words, and what gpu-reflex does about it. */
import { UsageError, type Command } from '../../events/cli-kit/command.ts';
import { parseFlagsAndArgs } from '../../events/cli-kit/flags.ts';
import { describeXid, NVLINK5_XIDS, nvlink5Verdict, decodeWords, type XidInfo } from '../../events/xid.ts';
import { nvidiaNames } from '../../events/xid/names.ts';

const HELP = `Usage: gpu-reflex xid explain XID [--subcode INTRINFO,ERRORSTATUS] [--json]

Prints what one XID means and what gpu-reflex does about it: NVIDIA's mnemonic, description and
resolution buckets (immediate and investigatory), in NVIDIA's words from its Xid catalog, and
gpu-reflex's default action, its escalation chain, whether a person is told, and why. A code
NVIDIA's catalog does not list says so, and gets the unknown-XID fallback.

Arguments:
  XID             the XID number (NVML's 999 included)

Options:
  --subcode W,W   NVLink5 XIDs (144-150) only: the intrinfo and errorStatus words of the kernel
                  line, in hex ("(0x00000013 0x00000000 ...)" on the line), decoded with NVIDIA's
                  XID 144-150 sheet; what gpu-reflex does then follows the row
  --json          one JSON object instead of text

Examples:
  gpu-reflex xid explain 79
  gpu-reflex xid explain 149 --subcode 0x00000013,0x00000000
  gpu-reflex xid explain 45 --json`;

const HEX_WORD = /^(?:0x)?([0-9a-fA-F]{1,8})$/;

/** `0x13,0x0`, `0x13:0x0` or `0x13 0x0` → the two words; undefined when it is not that. */
export function parseSubcode(text: string): { intrinfo: number; errorStatus: number } | undefined {
  const parts = text.trim().split(/[\s,:]+/);
  const words = parts.map((p) => HEX_WORD.exec(p)?.[1]);
  if (parts.length !== 2 || words.some((w) => w === undefined)) return undefined;
  return { intrinfo: Number.parseInt(words[0]!, 16), errorStatus: Number.parseInt(words[1]!, 16) };
}

function chain(info: Pick<XidInfo, 'action' | 'then'>): string {
  return [info.action, ...info.then].join(' → ');
}

function explain(xid: number, subcode: { intrinfo: number; errorStatus: number } | undefined) {
  const info = describeXid(xid);
  const names = nvidiaNames(xid);
  const decoded = subcode ? nvlink5Verdict(xid, subcode, undefined) : undefined;
  const action = decoded
    ? decoded.verdict === 'observe'
      ? { action: 'observe' as const, then: [] }
      : { action: info.action, then: info.then }
    : { action: info.action, then: info.then };
  return {
    xid,
    listed: info.listed,
    mnemonic: names?.mnemonic ?? '',
    description: info.description,
    meaning: info.meaning,
    nvidia: { immediate: info.nvidiaAction, investigatory: names?.investigatory ?? '' },
    ...(subcode
      ? {
          subcode: {
            ...subcode,
            decoded: decoded?.decode ? decodeWords(decoded.decode) : "not in NVIDIA's decode sheet",
            verdict: decoded!.verdict,
            why: decoded!.why,
          },
        }
      : {}),
    gpuReflex: {
      ...action,
      escalateOnRepeat: info.escalateOnRepeat,
      notify: info.notify,
      recommendation: info.recommendation,
    },
  };
}

function text(e: ReturnType<typeof explain>): string[] {
  const lines = [
    e.listed ? `XID ${e.xid}  ${e.mnemonic.replace(/\s*\n\s*/g, ' ')}` : `XID ${e.xid}  (not in NVIDIA's catalog)`,
  ];
  if (e.listed) {
    lines.push(`  NVIDIA: ${e.description.replace(/\s*\n\s*/g, ' ')}`);
    lines.push(
      `  immediate action: ${e.nvidia.immediate === 'NONE_GIVEN' ? 'none given (NONE_GIVEN)' : e.nvidia.immediate}`,
    );
    if (e.nvidia.investigatory)
      lines.push(`  investigatory action: ${e.nvidia.investigatory.replace(/\s*\n\s*/g, '; ')}`);
  } else {
    lines.push(`  ${e.meaning}`);
  }
  if (e.subcode)
    lines.push(
      `  sub-code: ${e.subcode.decoded} → ${e.subcode.verdict === 'observe' ? 'observe' : 'reset'} (${e.subcode.why})`,
    );
  lines.push(
    `  gpu-reflex: ${chain(e.gpuReflex)}` +
      `${e.gpuReflex.escalateOnRepeat ? ', escalating on repeats across workloads' : ''}` +
      `${e.gpuReflex.notify ? ', a person is told' : ''}`,
  );
  lines.push(`  why: ${e.gpuReflex.recommendation}`);
  return lines;
}

export const xidExplainCommand: Command = {
  path: ['xid', 'explain'],
  summary: "print what an XID means (NVIDIA's words) and what gpu-reflex does about it",
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parseFlagsAndArgs(args, { subcode: { type: 'string' }, json: { type: 'boolean' } });
    if (positionals.length !== 1)
      throw new UsageError(
        positionals.length === 0
          ? 'give one XID number (e.g. gpu-reflex xid explain 79)'
          : `one XID at a time, got ${positionals.join(' ')}`,
      );
    const raw = positionals[0]!;
    if (!/^\d{1,6}$/.test(raw)) throw new UsageError(`XID must be a number, got "${raw}"`);
    const xid = Number(raw);
    if (values.subcode !== undefined && !NVLINK5_XIDS.has(xid))
      throw new UsageError(`--subcode is for the NVLink5 XIDs 144-150, not XID ${xid}`);
    const subcode = values.subcode === undefined ? undefined : parseSubcode(values.subcode);
    if (values.subcode !== undefined && !subcode)
      throw new UsageError(
        `--subcode: expected INTRINFO,ERRORSTATUS as two hex words (e.g. 0x00000013,0x00000000), got ` +
          `"${values.subcode}"`,
      );
    const e = explain(xid, subcode);
    if (values.json) io.out(JSON.stringify(e));
    else for (const l of text(e)) io.out(l);
    return 0;
  },
};
