import { normalizePciBusId } from './parse-xid.ts';

/**
 * NVSwitch errors (SXids) from the kernel log. The NVSwitch driver writes one line per error with
 * its verdict, then detail lines for the same SXid:
 *
 *   nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
 *   nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)
 *   nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60 Sub-engine instance 00
 *   nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Data {0x10000000, ...}
 *
 * Only the verdict lines (`Fatal` / `Non-fatal`) are errors; the detail lines describe the one
 * before them and are not reported again. Any prefix (dmesg time, /dev/kmsg record, journald) is
 * ignored, as for XIDs.
 */
export interface KernelSxid {
  switch: string;
  /** The switch's PCI address in NVML's form (`00000000:06:00.0`). */
  pci: string;
  sxid: number;
  severity: 'fatal' | 'nonfatal';
  link?: number;
  message: string;
}

const SXID =
  /(nvidia-nvswitch\d{1,3}): SXid \((?:PCI:)?([0-9a-fA-F:.]{4,16})\):\s*(\d{1,6}),\s*(Fatal|Non-fatal)\s*,?\s*/;

export function parseSxidLine(line: string): KernelSxid | undefined {
  const m = SXID.exec(line);
  if (!m) return undefined;
  const pci = normalizePciBusId(m[2]!);
  if (!pci) return undefined;
  const message = line
    .slice(m.index + m[0].length)
    .replace(/\r$/, '')
    .trim()
    .slice(0, 1024);
  const link = /^Link (\d{1,4})\b/.exec(message);
  return {
    switch: m[1]!,
    pci,
    sxid: Number(m[3]),
    severity: m[4] === 'Fatal' ? 'fatal' : 'nonfatal',
    ...(link ? { link: Number(link[1]) } : {}),
    message,
  };
}
