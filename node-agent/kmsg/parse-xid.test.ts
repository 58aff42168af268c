import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeXid } from '../../events/xid.ts';
import { normalizePciBusId, parseXidLine } from './parse-xid.ts';

describe('parseXidLine', () => {
  it.each([
    [
      'newer form with pid and name, dmesg prefix',
      '[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.',
      { pci: '00000000:3B:00.0', xid: 79, pid: 1234, process: 'python', message: 'GPU has fallen off the bus.' },
    ],
    [
      '/dev/kmsg record prefix',
      '6,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.',
      { pci: '00000000:3B:00.0', xid: 79, pid: 1234, process: 'python' },
    ],
    [
      'journald prefix',
      'Nov 21 03:12:45 host kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.',
      { pci: '00000000:3B:00.0', xid: 79, pid: 1234 },
    ],
    [
      'older form without PCI: and without pid',
      'NVRM: Xid (0000:01:00): 13, 0000 00000000 0000a197',
      { pci: '00000000:01:00.0', xid: 13, pid: null, process: null, message: '0000 00000000 0000a197' },
    ],
    [
      'quoted unknown pid',
      "NVRM: Xid (PCI:0000:07:00): 31, pid='<unknown>', name=<unknown>, Ch 00000008",
      { pid: null, process: null, message: 'Ch 00000008' },
    ],
    [
      'bare unknown pid',
      'NVRM: Xid (PCI:0000:4e:00): 74, pid=<unknown>, name=<unknown>, NVLink: fatal error',
      { pid: null, process: null, message: 'NVLink: fatal error' },
    ],
    ['no message at all', 'NVRM: Xid (PCI:0000:4e:00): 45', { xid: 45, pid: null, process: null, message: '' }],
    [
      'MIG GPU instance',
      'NVRM: Xid (PCI:0000:c1:00 GPU-I:05): 43, pid=2201, name=python3, Ch 00000010',
      { pci: '00000000:C1:00.0', xid: 43, gpuInstanceId: 5 },
    ],
    // Read from /dev/kmsg on a real H200 (driver 580.159.04, 2026-11-26) after a kernel wrote to an unmapped address.
    [
      'real driver 580 record (flag c, "channel" wording)',
      '4,360,42811810,c;NVRM: Xid (PCI:0000:00:06): 31, pid=560, name=python3, channel 0x0000001e, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_8 faulted @ 0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE',
      {
        pci: '00000000:00:06.0',
        xid: 31,
        pid: 560,
        process: 'python3',
        message:
          'channel 0x0000001e, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_8 faulted @ 0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE',
      },
    ],
    ['Windows line ending', 'NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a, DBE\r', { xid: 48, message: 'DBE' }],
  ])('parses the %s', (_what, line, expected) => {
    expect(parseXidLine(line)).toMatchObject(expected);
  });

  it('adds meaning, recommendation and action from the XID catalog', () => {
    const xid = parseXidLine('NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=a, GPU has fallen off the bus.');
    const info = describeXid(79);
    expect(xid).toMatchObject({ meaning: info.meaning, recommendation: info.recommendation, action: 'drain-node' });
  });

  it.each([
    'NVRM: GPU at PCI:0000:3b:00: GPU-4b1e6f31',
    'nvidia: loading out-of-tree module taints kernel.',
    'NVRM: Xid (PCI:zz:00): 79, pid=1',
    'NVRM: Xid (PCI:0000:3b:00): not-a-number',
    '',
  ])('ignores a line that is not an XID report: %j', (line) => {
    expect(parseXidLine(line)).toBeUndefined();
  });

  it("reads an NVLink5 line's own verdict: Nonfatal, Fatal, or nothing", () => {
    expect(
      parseXidLine(
        'NVRM: Xid (PCI:0000:8d:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 09 (0x00000000 0x00000000 0x00000000)',
      )?.severity,
    ).toBe('nonfatal');
    expect(
      parseXidLine('NVRM: Xid (PCI:0000:8d:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 02 (0x00000004 0x00000000)')
        ?.severity,
    ).toBe('fatal');
    expect(
      parseXidLine('NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.')?.severity,
    ).toBeUndefined();
  });

  it("reads an NVLink5 line's unit, link, intrinfo and errorStatus for NVIDIA's decode", () => {
    const ber = parseXidLine(
      '[ 812.000001] NVRM: Xid (PCI:0000:04:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 08 (0x00000013 0x00000000 0x00000000 0x00000000)',
    );
    expect(ber).toMatchObject({
      xid: 149,
      severity: 'nonfatal',
      nvlink: { unit: 'NETIR_BER_EVENT', link: 8, intrinfo: 0x13, errorStatus: 0 },
    });
    const down = parseXidLine(
      'NVRM: Xid (PCI:0000:04:00): 149, NETIR_LINK_EVT/NETIR_LINK_DOWN Fatal XC0 i0 Link 00 (0x01000011 0x00000000 0x00000000 0x00000000)',
    );
    expect(down?.nvlink).toEqual({
      unit: 'NETIR_LINK_EVT/NETIR_LINK_DOWN',
      link: 0,
      intrinfo: 0x01000011,
      errorStatus: 0,
    });
    expect(
      parseXidLine(
        'NVRM: Xid (PCI:0000:04:00): 148, NVLPW_CTRL/NVLPW Nonfatal XC0 i0 Link 00 (0x0000000f 0x80000000 0x00000000 0x00000000)',
      )?.nvlink,
    ).toMatchObject({ errorStatus: 0x80000000 });
    // What `xid scan` prints follows NVIDIA's decode row, not the XID alone.
    expect(ber).toMatchObject({
      action: 'observe',
      recommendation: expect.stringContaining("NETIR_BER_EVENT: NVIDIA's decode says IGNORE"),
    });
    expect(down).toMatchObject({
      action: 'quarantine-gpu',
      recommendation: expect.stringContaining("NVIDIA's decode says RESET_GPU"),
    });
    // Only the NVLink5 XIDs carry the words; another XID's hex is not a sub-code.
    expect(
      parseXidLine('NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception (0x00000013 0x00000000)')?.nvlink,
    ).toBeUndefined();
    expect(parseXidLine('NVRM: Xid (PCI:0000:04:00): 149, NETIR_BER_EVENT Nonfatal')?.nvlink).toBeUndefined();
  });

  it('never throws, whatever the line', () => {
    const pieces = fc.constantFrom(
      'NVRM: Xid (',
      'PCI:',
      '0000:3b:00',
      '):',
      ' 79',
      ', pid=',
      "'<unknown>'",
      ', name=',
      '<unknown>',
      ',',
      ' GPU-I:',
      '\r',
      '[1.0] ',
      '6,1,2,-;',
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'grapheme' }),
          fc.array(fc.oneof(pieces, fc.string()), { maxLength: 12 }).map((a) => a.join('')),
        ),
        (line) => {
          const parsed = parseXidLine(line);
          if (parsed) expect(parsed.pci).toMatch(/^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$/);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('recovers pid, process and XID from generated well-formed lines', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 1, max: 999 }),
        fc.option(fc.integer({ min: 1, max: 4_194_304 }), { nil: null }),
        fc.option(fc.stringMatching(/^[a-z][a-z0-9_.-]{0,14}$/), { nil: null }),
        fc.constantFrom('', '[  12.5] ', '4,1,2,-;', 'Nov 21 03:12:45 h kernel: '),
        (bus, xid, pid, name, prefix) => {
          const hex = bus.toString(16).padStart(2, '0');
          const line = `${prefix}NVRM: Xid (PCI:0000:${hex}:00): ${xid}, pid=${pid ?? "'<unknown>'"}, name=${name ?? '<unknown>'}, text`;
          expect(parseXidLine(line)).toMatchObject({
            pci: `00000000:${hex.toUpperCase()}:00.0`,
            xid,
            pid,
            process: name,
            message: 'text',
          });
        },
      ),
    );
  });
});

describe('normalizePciBusId', () => {
  it.each([
    ['0000:3b:00', '00000000:3B:00.0'],
    ['00000000:3B:00.0', '00000000:3B:00.0'],
    ['3b:00.1', '00000000:3B:00.1'],
    ['1:2:3', '00000001:02:03.0'],
    ['nope', undefined],
  ])('%s → %s', (input, expected) => {
    expect(normalizePciBusId(input)).toBe(expected);
  });
});
