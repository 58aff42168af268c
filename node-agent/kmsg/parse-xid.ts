import { describeXid, NVLINK5_XIDS, nvlink5Verdict, type RemediationAction } from '../../events/xid.ts';
import type { Nvlink5Words } from '../../events/xid/nvlink5.ts';

/**
 * Parses NVIDIA driver XID lines from a kernel log: dmesg (`[12345.678901] `, `[Fri Nov 21 ...] `),
 * /dev/kmsg records (`6,1234,5678901,-;`) or journald/syslog (`Nov 21 03:12:45 host kernel: `).
 * The prefix is not anchored: whatever precedes `NVRM: Xid` is ignored, so new log shapes still
 * parse. Forms seen from drivers:
 *
 *   NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
 *   NVRM: Xid (PCI:0000:07:00): 31, pid='<unknown>', name=<unknown>, Ch 00000008, ...
 *   NVRM: Xid (PCI:0000:c1:00 GPU-I:05): 43, pid=2201, name=python3, Ch 00000010
 *   NVRM: Xid (0000:01:00): 13, 0000 00000000 0000a197 ...           (older drivers)
 *   NVRM: Xid (PCI:0000:04:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 08 (0x00000013 0x00000000 …)
 *
 * The NVLink5 XIDs (144–150) name their unit first and carry intrinfo and errorStatus as the first two
 * words in parentheses (NVIDIA's "XID 144-150 Decode" sheet; line shape as in leptonai/gpud's NVLink
 * log tests): they are returned as `nvlink` for the decode (events/xid/nvlink5.ts).
 *
 * The PCI id is normalised to NVML's form (`00000000:3B:00.0`) so it matches nvmlPciInfo_t.busId.
 */

export interface KernelXid {
  /** NVML-style PCI bus id: 8-digit domain, upper case, function included. */
  pci: string;
  xid: number;
  pid: number | null;
  process: string | null;
  /** The driver's text after the pid/name fields ('' when there is none). */
  message: string;
  /** MIG GPU instance named in the line (`GPU-I:05`), when there is one. */
  gpuInstanceId?: number;
  /** The line's own verdict, where the driver writes one (NVLink5 errors, XID 144–150). */
  severity?: 'fatal' | 'nonfatal';
  /** NVLink5 XIDs (144–150): the unit, link, intrinfo and errorStatus the line names. */
  nvlink?: Nvlink5Words;
  meaning: string;
  recommendation: string;
  action: RemediationAction;
}

/**
 * The head of an XID report; the driver's text is the rest of the line. The rest is not part of
 * the pattern on purpose: `(.*)$` made the engine rescan the whole tail from every `NVRM: Xid (`
 * when the tail held a line terminator, quadratic on long lines (see firstXidMatch).
 */
const XID_HEAD = new RegExp(
  /NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}(?:\.[0-7])?)/.source +
    /((?:\s+GPU-C?I:\s*[0-9a-fA-F]+)*)\):\s*(\d{1,6})\b,?\s*/.source,
  'g',
);
/** What `.` in a regex does not match: the driver's text runs to the end of the line without one. */
const LINE_TERMINATOR = /[\n\r\u2028\u2029]/g;
const GPU_INSTANCE = /GPU-I:\s*([0-9a-fA-F]+)/;
const PID = /^pid='?(<unknown>|\d+)'?(?:,\s*|$)/;
const NAME = /^name=([^,]*)(?:,\s*|$)/;
/** `NETIR_BER_EVENT Nonfatal XC0 i0 Link 08 (0x00000013 0x00000000 …)`: unit, link, intrinfo, errorStatus. */
const NVLINK_UNIT = /^([A-Za-z0-9_/]{1,64})\s/;
const NVLINK_LINK = /\bLink\s+(\d{1,4})\b/;
const NVLINK_WORDS = /\((0x[0-9a-fA-F]{1,8})[\s,]+(0x[0-9a-fA-F]{1,8})/;

/** The NVLink5 words of the driver's text, or undefined when it does not carry them. */
export function parseNvlinkWords(text: string): Nvlink5Words | undefined {
  const unit = NVLINK_UNIT.exec(text)?.[1];
  const words = NVLINK_WORDS.exec(text);
  if (!unit || !words) return undefined;
  const link = NVLINK_LINK.exec(text)?.[1];
  return {
    unit,
    ...(link === undefined ? {} : { link: Number(link) }),
    intrinfo: Number.parseInt(words[1]!, 16),
    errorStatus: Number.parseInt(words[2]!, 16),
  };
}

/** `0000:3b:00` / `3b:00.0` forms → `00000000:3B:00.0`; undefined when it is not a bus id. */
export function normalizePciBusId(id: string): string | undefined {
  const m = /^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.([0-7]))?$/.exec(id.trim());
  if (!m) return undefined;
  const [, domain = '0', bus = '', device = '', fn = '0'] = m;
  return `${domain.padStart(8, '0')}:${bus.padStart(2, '0')}:${device.padStart(2, '0')}.${fn}`.toUpperCase();
}

/** Unknown-process markers the driver writes instead of a pid or a name. */
function known(value: string): string | null {
  const v = value.trim();
  return v === '' || v === '<unknown>' || v === "'<unknown>'" ? null : v;
}

/** The index just past the last line terminator in `text` (0 when there is none); one pass. */
function afterLastTerminator(text: string): number {
  let after = 0;
  LINE_TERMINATOR.lastIndex = 0;
  while (LINE_TERMINATOR.exec(text)) after = LINE_TERMINATOR.lastIndex;
  return after;
}

/**
 * The first XID head whose rest of the line holds no line terminator, as `/head(.*)$/` would find
 * it, in time linear in the line: the terminator is located once, not once per candidate.
 */
function firstXidMatch(line: string): { head: RegExpExecArray; rest: string } | undefined {
  const mustEndAfter = afterLastTerminator(line);
  XID_HEAD.lastIndex = 0;
  for (let m = XID_HEAD.exec(line); m; m = XID_HEAD.exec(line)) {
    const end = m.index + m[0].length;
    if (end >= mustEndAfter) return { head: m, rest: line.slice(end) };
    XID_HEAD.lastIndex = m.index + 1;
  }
  return undefined;
}

/** One line → a KernelXid, or undefined when the line is not an XID report. Never throws. */
export function parseXidLine(line: string): KernelXid | undefined {
  const found = firstXidMatch(line.replace(/\r$/, ''));
  if (!found) return undefined;
  const [, rawPci = '', instances = '', rawXid = ''] = found.head;
  const rest0 = found.rest;
  const pci = normalizePciBusId(rawPci);
  const xid = Number.parseInt(rawXid, 10);
  if (!pci || !Number.isSafeInteger(xid)) return undefined;
  let rest = rest0.trim();
  let pid: number | null = null;
  let process: string | null = null;
  const p = PID.exec(rest);
  if (p) {
    pid = p[1] === '<unknown>' || p[1] === undefined ? null : Number(p[1]);
    rest = rest.slice(p[0].length);
  }
  const n = NAME.exec(rest);
  if (n) {
    process = known(n[1] ?? '');
    rest = rest.slice(n[0].length);
  }
  const gi = GPU_INSTANCE.exec(instances)?.[1];
  const info = describeXid(xid);
  // `Nonfatal` is checked first: it contains `fatal`.
  const severity = /\bnon-?fatal\b/i.test(rest) ? 'nonfatal' : /\bfatal\b/i.test(rest) ? 'fatal' : undefined;
  const nvlink = NVLINK5_XIDS.has(xid) ? parseNvlinkWords(rest.trim()) : undefined;
  // An NVLink5 XID's action is its decode row's (or its Nonfatal word's), not the XID's alone.
  const verdict = NVLINK5_XIDS.has(xid) ? nvlink5Verdict(xid, nvlink, severity) : undefined;
  const observed = verdict?.verdict === 'observe';
  return {
    pci,
    xid,
    pid,
    process,
    message: rest.trim(),
    ...(nvlink ? { nvlink } : {}),
    ...(gi === undefined ? {} : { gpuInstanceId: Number.parseInt(gi, 16) }),
    ...(severity ? { severity } : {}),
    meaning: info.meaning,
    recommendation: verdict
      ? `${verdict.why}: ${observed ? 'observe and count' : info.recommendation}`
      : info.recommendation,
    action: observed ? 'observe' : info.action,
  };
}
