import { describe, expect, it } from 'vitest';
import { describeXid, XID_CATALOG, REMEDIATION_ACTIONS } from './xid.ts';

describe('XID catalog', () => {
  it('covers every XID in docs/xid-catalog.md', () => {
    const reference = [8, 13, 31, 43, 45, 46, 48, 54, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 109, 110, 119, 120, 121, 136, 137, 140, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172];
    expect([...XID_CATALOG.keys()].sort((a, b) => a - b)).toEqual(reference);
  });

  it.each([
    [79, 'drain-node', 'RESTART_BM'],
    [48, 'quarantine-gpu', 'RESET_GPU'],
    [13, 'observe', 'RESTART_APP'],
    [45, 'observe', 'IGNORE'],
    [94, 'restart-workload', 'RESTART_APP'],
    [54, 'drain-node', 'CHECK_MECHANICALS'],
  ] as const)('XID %i defaults to %s (NVIDIA: %s)', (xid, action, bucket) => {
    expect(describeXid(xid).action).toBe(action);
    expect(describeXid(xid).nvidiaAction).toBe(bucket);
  });

  it('never escalates on XID 45 noise', () => {
    expect(describeXid(45).escalateOnRepeat).toBe(false);
  });

  it('quarantines the GPU and tells a person on unknown XIDs, 999 included: never a node drain, never a silent observe', () => {
    for (const xid of [999, 12345]) {
      expect(describeXid(xid)).toMatchObject({ action: 'quarantine-gpu', then: [], notify: true });
    }
  });

  it('follows the current catalog where it corrected older tables (xid.md review, 2026-11-23)', () => {
    // 142: CONTACT_SUPPORT, no automated action; 160: IGNORE; 61: unused. Observe and tell a person.
    for (const xid of [61, 142, 160]) expect(describeXid(xid), `XID ${xid}`).toMatchObject({ action: 'observe', then: [], notify: true });
    expect(describeXid(142).nvidiaAction).toBe('CONTACT_SUPPORT');
    expect(describeXid(160).nvidiaAction).toBe('IGNORE');
  });

  it('follows NVIDIA\'s catalog for 159 and 161 and, where it names no bucket (162–172), never drains a node', () => {
    expect(describeXid(159)).toMatchObject({ nvidiaAction: 'CHECK_UVM', action: 'observe', notify: true });
    expect(describeXid(161)).toMatchObject({ nvidiaAction: 'IGNORE', action: 'observe', notify: true });
    // The power-smoothing reports leave the GPU working; the rest are failures nobody has a bucket for.
    for (const xid of [162, 163, 164, 165]) expect(describeXid(xid), `XID ${xid}`).toMatchObject({ nvidiaAction: 'NONE_GIVEN', action: 'observe', then: [] });
    for (const xid of [166, 167, 168, 169, 170]) expect(describeXid(xid), `XID ${xid}`).toMatchObject({ nvidiaAction: 'NONE_GIVEN', action: 'quarantine-gpu', notify: true });
    // 171/172 detail an XID 48: its remedy, a reset.
    for (const xid of [171, 172]) expect(describeXid(xid), `XID ${xid}`).toMatchObject({ action: 'quarantine-gpu', then: describeXid(48).then });
  });

  it('only uses known actions', () => {
    for (const info of XID_CATALOG.values()) {
      for (const a of [info.action, ...info.then]) expect(REMEDIATION_ACTIONS).toContain(a);
    }
  });
});
