import { describe, expect, it } from 'vitest';
import { alwaysIgnored, decodeNvlink5, matchesPattern, NVLINK5_DECODE, nvlink5Verdict } from './nvlink5.ts';

describe("NVLink5 decode (NVIDIA's XID 144-150 Decode sheet)", () => {
  // intrinfo / errorStatus pairs as drivers print them (line shapes as in leptonai/gpud's NVLink log tests).
  it.each([
    [144, 0x00000001, 0x00000001, 'SAW_MVB', 'IGNORE'],
    [144, 0x00000001, 0x00000004, 'SAW_MVB', 'IGNORE'],
    [144, 0x00000001, 0x00000008, 'SAW_MVB', 'IGNORE'],
    [144, 0x00000001, 0x00000002, 'SAW_MVB', 'RESET_GPU'],
    [145, 0x00000004, 0x00000001, 'RLW_REMAP', 'XID_154_EVAL'],
    [145, 0x00000004, 0x00000040, 'RLW_REMAP', 'RESET_GPU'],
    [146, 0x00000009, 0x00000004, 'TLW_CTRL', 'RESET_GPU'],
    [147, 0x0000000e, 0x00000001, 'TREX', 'IGNORE'],
    [148, 0x0000000f, 0x80000000, 'NVLPW_CTRL/NVLPW', 'IGNORE'],
    [149, 0x00000013, 0x00000000, 'NETIR_BER_EVENT', 'IGNORE'],
    [149, 0x00000013, 0x00000003, 'NETIR_BER_EVENT', 'IGNORE'],
    [149, 0x00000014, 0x00000003, 'NETIR_MFDE_EVENT', 'IGNORE'],
    [149, 0x00000014, 0x00000001, 'NETIR_MFDE_EVENT', 'RESET_GPU'],
    [149, 0x00000018, 0x00000000, 'NETIR/NETIR_INT', 'RESET_GPU'],
    [149, 0x01000011, 0x00000000, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', 'RESET_GPU'],
    // Bits 20–25 of a NETIR_LINK_DOWN say why: 100110 and 101000 are IGNORE although the sheet calls them fatal.
    [149, 0x02600011, 0x00000000, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', 'IGNORE'],
    [149, 0x02800011, 0x00000000, 'NETIR_LINK_EVT/NETIR_LINK_DOWN', 'IGNORE'],
    [150, 0x00000000, 0x00000000, 'MSE_WATCHDOG', 'RESET_GPU'],
    // The v1 encoding of a BER event.
    [149, 0x00000226, 0x00000001, 'NETIR_BER_EVENT', 'IGNORE'],
  ])('XID %i intrinfo %s errorStatus %s is %s → %s', (xid, intrinfo, status, unit, resolution) => {
    expect(decodeNvlink5(xid, intrinfo, status)).toMatchObject({ unit, resolution });
  });

  it('reads an errorStatus of several bits as its bits, the strongest winning', () => {
    expect(decodeNvlink5(144, 0x1, 0x0000000d)).toMatchObject({
      resolution: 'IGNORE',
      rows: [{ errorStatus: 1 }, { errorStatus: 4 }, { errorStatus: 8 }],
    });
    expect(decodeNvlink5(144, 0x1, 0x00000003)).toMatchObject({ resolution: 'RESET_GPU' });
  });

  it('knows the unit but not a status the sheet lacks; knows neither for an unknown unit', () => {
    expect(decodeNvlink5(144, 0x1, 0x00000400)).toMatchObject({ unit: 'SAW_MVB', resolution: undefined, rows: [] });
    expect(decodeNvlink5(149, 0x0000007f, 0)).toBeUndefined();
    expect(decodeNvlink5(79, 0x1, 0x1)).toBeUndefined();
  });

  it('no v2 sample of one unit matches another unit’s v1 pattern of the same XID, and back (the order v2 → v1 is safe)', () => {
    const sample = (p: string) => Number.parseInt(p.replace(/-/g, '0'), 2);
    for (const a of NVLINK5_DECODE) {
      for (const b of NVLINK5_DECODE) {
        if (a.xid !== b.xid || a.unit === b.unit) continue;
        expect(matchesPattern(b.intrinfoV1, sample(a.intrinfoV2)), `${a.xid} ${a.unit} v2 vs ${b.unit} v1`).toBe(false);
        expect(matchesPattern(b.intrinfoV2, sample(a.intrinfoV1)), `${a.xid} ${a.unit} v1 vs ${b.unit} v2`).toBe(false);
      }
    }
  });

  it('has only IGNORE rows for 147 and 148', () => {
    expect([144, 145, 146, 147, 148, 149, 150].filter(alwaysIgnored)).toEqual([147, 148]);
  });

  it.each([
    ['a decoded IGNORE row, whatever the line says', 149, { intrinfo: 0x13, errorStatus: 0 }, 'fatal', 'observe'],
    ['a decoded RESET_GPU row, whatever the line says', 149, { intrinfo: 0x18, errorStatus: 0 }, 'nonfatal', 'reset'],
    ['147 with no words at all (NVML only)', 147, undefined, undefined, 'observe'],
    ['an undecoded Nonfatal line', 146, { intrinfo: 0x7f, errorStatus: 0 }, 'nonfatal', 'observe'],
    ['an undecoded Fatal line', 146, { intrinfo: 0x7f, errorStatus: 0 }, 'fatal', 'reset'],
    ['NVML only (no line, no word)', 149, undefined, undefined, 'reset'],
  ] as const)('verdict for %s', (_, xid, words, severity, verdict) => {
    expect(nvlink5Verdict(xid, words, severity).verdict).toBe(verdict);
  });
});
