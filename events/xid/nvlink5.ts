/**
 * NVIDIA's decode of the NVLink5 XIDs 144–150 (the "XID 144-150 Decode" sheet of NVIDIA's Xid
 * catalog, nvlink5-decode.tsv): the kernel line carries two words, intrinfo and errorStatus
 *
 *   NVRM: Xid (PCI:0000:04:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 00 (0x00000013 0x00000000 …)
 *
 * intrinfo names the unit (its low bits, and for NETIR_LINK_DOWN bits 20–25 the reason), errorStatus
 * the error within the unit; each row of the sheet says IGNORE, RESET_GPU or XID_154_EVAL. Pure.
 */
import { NVLINK5_UNITS } from './nvidia.generated.ts';
import type { Nvlink5DecodeRow, Nvlink5Resolution } from './types.ts';

/** A decode row as decisions and reasons use it (the sheet's other columns stay in the table). */
export type Nvlink5Row = Pick<
  Nvlink5DecodeRow,
  'xid' | 'unit' | 'intrinfoV1' | 'intrinfoV2' | 'errorStatus' | 'resolution' | 'investigatory' | 'severity'
>;

/** Every row of NVIDIA's decode sheet, expanded from the generated units. */
export const NVLINK5_DECODE: readonly Nvlink5Row[] = NVLINK5_UNITS.flatMap(
  ([xid, unit, intrinfoV1, intrinfoV2, rows]) =>
    rows.map(([errorStatus, resolution, investigatory, severity]) => ({
      xid,
      unit,
      intrinfoV1,
      intrinfoV2,
      errorStatus,
      resolution,
      investigatory,
      severity,
    })),
);

export const NVLINK5_XIDS: ReadonlySet<number> = new Set([144, 145, 146, 147, 148, 149, 150]);

/** What the two words mean, per NVIDIA's sheet. */
export interface Nvlink5Decode {
  xid: number;
  unit: string;
  intrinfo: number;
  errorStatus: number;
  /** The sheet's rows that matched (more than one when errorStatus has several bits set). */
  rows: readonly Nvlink5Row[];
  /** The strongest of the rows' resolutions; undefined when the unit is known but the status is not in the sheet. */
  resolution: Nvlink5Resolution | undefined;
}

/** `------000000-------------0010011` against a 32-bit word, most significant bit first. */
export function matchesPattern(pattern: string, word: number): boolean {
  for (let i = 0; i < 32; i++) {
    const want = pattern[i];
    if (want === '-') continue;
    const bit = (word >>> (31 - i)) & 1;
    if (String(bit) !== want) return false;
  }
  return true;
}

// Stronger resolutions win when several rows match: a fatal bit among non-fatal ones is fatal.
const STRENGTH: Record<Nvlink5Resolution, number> = { IGNORE: 0, XID_154_EVAL: 1, RESET_GPU: 2 };

function strongest(rows: readonly Nvlink5Row[]): Nvlink5Resolution {
  return rows.reduce<Nvlink5Resolution>((a, r) => (STRENGTH[r.resolution] > STRENGTH[a] ? r.resolution : a), 'IGNORE');
}

function bitsOf(word: number): number[] {
  const bits: number[] = [];
  for (let b = 0; b < 32; b++) if ((word >>> b) & 1) bits.push((1 << b) >>> 0);
  return bits;
}

/**
 * The sheet's verdict for one NVLink5 XID, or undefined when no row's intrinfo pattern matches (not
 * an NVLink5 XID, or a unit the sheet does not know). The v2 encoding is tried before v1: drivers
 * that print v2 are the current ones, and v1 and v2 patterns of different units never overlap in
 * the sheet of 2025-10-29 (nvlink5.test.ts checks it). An errorStatus with several bits set, none
 * of which is a row by itself, decodes as the rows of its bits when every bit is one.
 */
export function decodeNvlink5(xid: number, intrinfo: number, errorStatus: number): Nvlink5Decode | undefined {
  const rows = NVLINK5_DECODE.filter((r) => r.xid === xid);
  for (const encoding of ['intrinfoV2', 'intrinfoV1'] as const) {
    const unitRows = rows.filter((r) => matchesPattern(r[encoding], intrinfo >>> 0));
    if (unitRows.length === 0) continue;
    const base = { xid, unit: unitRows[0]!.unit, intrinfo: intrinfo >>> 0, errorStatus: errorStatus >>> 0 };
    const exact = unitRows.filter((r) => r.errorStatus === errorStatus >>> 0);
    if (exact.length > 0) return { ...base, unit: exact[0]!.unit, rows: exact, resolution: strongest(exact) };
    const bits = bitsOf(errorStatus);
    const perBit = bits.map((b) => unitRows.filter((r) => r.errorStatus === b));
    if (bits.length > 1 && perBit.every((r) => r.length > 0)) {
      const matched = perBit.flat();
      return { ...base, rows: matched, resolution: strongest(matched) };
    }
    return { ...base, rows: [], resolution: undefined };
  }
  return undefined;
}

/** Every row of this XID's decode says IGNORE (147 TREX and 148 NVLPW_CTRL): nothing to decode before acting. */
export function alwaysIgnored(xid: number): boolean {
  const rows = NVLINK5_DECODE.filter((r) => r.xid === xid);
  return rows.length > 0 && rows.every((r) => r.resolution === 'IGNORE');
}

const hex = (n: number) => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;

/**
 * "NETIR_BER_EVENT (intrinfo 0x00000013, errorStatus 0x00000000): IGNORE, Non-fatal; investigate:
 * INVESTIGATE_LINK_SI_AND_CABLES"
 */
export function decodeWords(d: Nvlink5Decode): string {
  const where = `${d.unit} (intrinfo ${hex(d.intrinfo)}, errorStatus ${hex(d.errorStatus)})`;
  if (d.resolution === undefined) return `${where}: errorStatus not in NVIDIA's decode sheet`;
  const severities = [...new Set(d.rows.map((r) => r.severity))].join('/');
  const investigate = [...new Set(d.rows.map((r) => r.investigatory).filter((x) => x !== ''))].join(', ');
  return `${where}: ${d.resolution}, ${severities}${investigate ? `; investigate: ${investigate}` : ''}`;
}

/** The kernel line's NVLink5 words, as the agent parses them (node-agent/kmsg/parse-xid.ts). */
export interface Nvlink5Words {
  unit: string;
  link?: number;
  intrinfo: number;
  errorStatus: number;
}

/** The event's `nvlink` field: the line's words and NVIDIA's decode of them, when a row matches. */
export function nvlinkDetail(
  xid: number,
  w: Nvlink5Words,
): Nvlink5Words & { decoded?: { unit: string; resolution?: Nvlink5Resolution; reason: string } } {
  const d = decodeNvlink5(xid, w.intrinfo, w.errorStatus);
  return {
    ...w,
    ...(d
      ? {
          decoded: {
            unit: d.unit,
            ...(d.resolution ? { resolution: d.resolution } : {}),
            reason: decodeWords(d).slice(0, 512),
          },
        }
      : {}),
  };
}

/**
 * One NVLink5 sighting's verdict, as the policy and the incident key both need it: the decode row
 * when one matches (IGNORE and XID_154_EVAL observe, RESET_GPU resets); 147/148 always observe;
 * undecoded, the kernel line's own word (Nonfatal observes; Fatal, or none — NVML only — resets).
 */
export function nvlink5Verdict(
  xid: number,
  words: { intrinfo: number; errorStatus: number } | undefined,
  severity: 'fatal' | 'nonfatal' | undefined,
): { verdict: 'observe' | 'reset'; why: string; decode?: Nvlink5Decode } {
  const decode = words ? decodeNvlink5(xid, words.intrinfo, words.errorStatus) : undefined;
  if (decode?.resolution)
    return {
      verdict: decode.resolution === 'RESET_GPU' ? 'reset' : 'observe',
      why: `${decode.unit}: NVIDIA's decode says ${decode.resolution}`,
      decode,
    };
  if (alwaysIgnored(xid))
    return {
      verdict: 'observe',
      why: `every row of NVIDIA's decode for XID ${xid} is IGNORE`,
      ...(decode ? { decode } : {}),
    };
  if (severity === 'nonfatal')
    return { verdict: 'observe', why: 'Nonfatal: observe and count', ...(decode ? { decode } : {}) };
  return {
    verdict: 'reset',
    why: severity === 'fatal' ? 'Fatal, not decoded' : 'not decoded (no kernel line)',
    ...(decode ? { decode } : {}),
  };
}
