import { describe, expect, it } from 'vitest';
import { parseSxidLine } from './parse-sxid.ts';
import { parseXidLine } from './parse-xid.ts';

describe('parseSxidLine', () => {
  it.each([
    [
      'a fatal link fault, dmesg prefix',
      '[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up',
      {
        switch: 'nvidia-nvswitch1',
        pci: '00000000:06:00.0',
        sxid: 20034,
        severity: 'fatal',
        link: 48,
        message: 'Link 48 LTSSM Fault Up',
      },
    ],
    [
      'a non-fatal one, /dev/kmsg record',
      '3,9912,131453740743,-;nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)',
      { switch: 'nvidia-nvswitch3', pci: '00000000:05:00.0', sxid: 12028, severity: 'nonfatal', link: 32 },
    ],
    [
      'no link named',
      'nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 11004, Fatal, ingress invalid ACL',
      { sxid: 11004, severity: 'fatal', message: 'ingress invalid ACL' },
    ],
  ])('parses %s', (_what, line, expected) => {
    expect(parseSxidLine(line)).toMatchObject(expected);
  });

  it.each([
    [
      'the detail line that follows a verdict',
      'nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60 Sub-engine instance 00',
    ],
    ['the data line', 'nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Data {0x10000000, 0x10000000, 0x00000000}'],
    ['a code that is not a number', 'nvidia-nvswitch0: SXid (PCI:0000:00:00.0): xyz, Fatal error'],
    ['a GPU XID', 'NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.'],
  ])('ignores %s', (_what, line) => {
    expect(parseSxidLine(line)).toBeUndefined();
  });

  it('is not mistaken for an XID (the two parsers never both claim a line)', () => {
    expect(
      parseXidLine('[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up'),
    ).toBeUndefined();
  });
});
