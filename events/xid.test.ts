import { describe, expect, it } from 'vitest';
import { describeXid, XID_CATALOG, REMEDIATION_ACTIONS, type NvidiaBucket } from './xid.ts';
import { BUCKET_DEFAULTS } from './xid/defaults.ts';
import { CURATED } from './xid/curated.ts';
import { nvidiaNames } from './xid/names.ts';

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

describe('XID catalog', () => {
  it("lists every code of NVIDIA's catalog, 1 to 172 (catalog of 2025-10-29)", () => {
    expect([...XID_CATALOG.keys()].sort((a, b) => a - b)).toEqual(range(1, 172));
    for (const info of XID_CATALOG.values()) expect(info.listed, `XID ${info.xid}`).toBe(true);
  });

  // NVIDIA's wording, copied from docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
  // (read 2026-12-01): a sample, so a table that drifts from NVIDIA's page fails here.
  it.each([
    [8, 'ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT', 'GPU stopped processing', 'RESTART_APP', 'CONTACT_SUPPORT'],
    [
      11,
      'ROBUST_CHANNEL_GR_ERROR_MISSING_HW',
      'Invalid or corrupted push buffer stream',
      'RESTART_APP',
      'CHECK_APP/CUDA',
    ],
    [38, 'ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT', 'Driver firmware error', 'IGNORE', 'CONTACT_SUPPORT'],
    [
      45,
      'ROBUST_CHANNEL_PREEMPTIVE_REMOVAL',
      'Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda applications and hitting a DBE',
      'WORKFLOW_XID_45',
      'Solo: RESTART_FM\nNot Solo: IGNORE (follow other Xid)',
    ],
    [48, 'ROBUST_CHANNEL_GPU_ECC_DBE', 'Double Bit ECC Error', 'WORKFLOW_XID_48', 'WORKFLOW_XID_48'],
    [74, 'NVLINK_ERROR', 'NVLINK Error', 'WORKFLOW_NVLINK_ERR', 'CONTACT_SUPPORT'],
    [78, 'VGPU_START_ERROR', 'vGPU Start Error', 'UPDATE_SWFW', 'UPDATE_SWFW'],
    [79, 'ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS', 'GPU has fallen off the bus', 'RESTART_BM', 'CONTACT_SUPPORT'],
    [
      93,
      'INFOROM_ERASE_LIMIT_EXCEEDED',
      'Non-fatal violation of provisioned InfoROM wear limit',
      'IGNORE',
      'CONTACT_SUPPORT',
    ],
    [141, 'ROBUST_CHANNEL_FAST_PATH_ERROR', 'CUDA Fast Path Error', 'IGNORE', 'CONTACT_SUPPORT'],
    [149, 'NVLINK_NETIR_ERROR', 'NVLINK: NETIR Error', 'WORKFLOW_NVLINK5_ERR', 'WORKFLOW_NVLINK5_ERR'],
    [
      154,
      'GPU_RECOVERY_ACTION_CHANGED',
      'GPU Recovery Action Changed',
      'XID_154',
      'N/A Informational only regarding another Xid',
    ],
    [159, 'ROBUST_CHANNEL_CHI_NON_DATA_ERROR', 'CHI Non-Data Error', 'CHECK_UVM', 'SYMPATHETIC_REPORT_SOLO'],
    [167, 'PCIE_FATAL_TIMEOUT', 'PCIE_FATAL_TIMEOUT', 'NONE_GIVEN', ''],
  ] as const)('XID %i is %s, "%s", %s (NVIDIA\'s words)', (code, mnemonic, description, bucket, investigatory) => {
    expect(describeXid(code)).toMatchObject({ description, nvidiaAction: bucket });
    expect(nvidiaNames(code)).toEqual({ mnemonic, investigatory });
  });

  // The lists of the 2026-12-01 review of NVIDIA's catalog (issue #36).
  const RESTART_APP = [
    8,
    11,
    13,
    25,
    31,
    32,
    ...range(39, 41),
    60,
    68,
    69,
    ...range(70, 72),
    ...range(75, 77),
    80,
    ...range(82, 86),
    88,
    89,
    94,
    ...range(96, 105),
    ...range(126, 135),
    139,
  ];
  const IGNORE = [14, 37, 38, 43, 44, 63, 66, 67, 92, 93, 106, 107, 108, 121, 137, 141, 152, 153, 157, 160, 161];
  const bucketOf = (b: NvidiaBucket) => [...XID_CATALOG.values()].filter((i) => i.nvidiaAction === b).map((i) => i.xid);

  it('puts every RESTART_APP, IGNORE and RESET_GPU code in its NVIDIA bucket', () => {
    expect(bucketOf('RESTART_APP')).toEqual(RESTART_APP);
    expect(bucketOf('IGNORE')).toEqual(IGNORE);
    expect(bucketOf('RESET_GPU')).toEqual([46, 62, 64, 95, 109, 110, 119, 120, 136, 140, 143, 155, 156, 158]);
    expect(bucketOf('UPDATE_SWFW')).toEqual([78]);
    expect(bucketOf('NONE_GIVEN')).toEqual(range(162, 172));
  });

  it('observes every IGNORE code: nothing fenced, evicted or cordoned by default', () => {
    for (const x of IGNORE)
      expect(describeXid(x), `XID ${x}`).toMatchObject({ action: 'observe', escalateOnRepeat: false });
  });

  it('restarts at most the workload for a RESTART_APP code (13 and 31 only observe first)', () => {
    for (const x of RESTART_APP) expect(['restart-workload', 'observe'], `XID ${x}`).toContain(describeXid(x).action);
    for (const x of [11, 32, 39, 80])
      expect(describeXid(x), `XID ${x}`).toMatchObject({ action: 'restart-workload', fault: 'application' });
  });

  it('gives none of the XIDs NVIDIA says to ignore or to restart the application for a quarantine (issue #36)', () => {
    for (const x of [11, 32, 38, 39, 44, 80, 93, 141, 152])
      expect(describeXid(x).action, `XID ${x}`).not.toBe('quarantine-gpu');
  });

  it('follows the bucket default unless the code is curated', () => {
    for (const info of XID_CATALOG.values()) {
      if (CURATED[info.xid] || info.nvidiaAction === 'WORKFLOW_NVLINK5_ERR') continue;
      const d = BUCKET_DEFAULTS[info.nvidiaAction];
      expect({ action: info.action, then: info.then, notify: info.notify }, `XID ${info.xid}`).toEqual({
        action: d.action,
        then: d.then,
        notify: d.notify,
      });
    }
  });

  it.each([
    [79, 'drain-node', 'RESTART_BM'],
    [48, 'quarantine-gpu', 'WORKFLOW_XID_48'],
    [13, 'observe', 'RESTART_APP'],
    [45, 'observe', 'WORKFLOW_XID_45'],
    [94, 'restart-workload', 'RESTART_APP'],
    [54, 'drain-node', 'CHECK_MECHANICALS'],
    [78, 'observe', 'UPDATE_SWFW'],
    [1, 'observe', 'CONTACT_SUPPORT'],
  ] as const)('XID %i defaults to %s (NVIDIA: %s)', (xid, action, bucket) => {
    expect(describeXid(xid).action).toBe(action);
    expect(describeXid(xid).nvidiaAction).toBe(bucket);
  });

  it('never escalates on XID 45 noise', () => {
    expect(describeXid(45).escalateOnRepeat).toBe(false);
  });

  it("replaces a GPU for XID 48 only on the SRAM threshold, never on its count (NVIDIA's WORKFLOW_XID_48)", () => {
    expect(describeXid(48)).toMatchObject({ action: 'quarantine-gpu', then: ['reboot-node'], escalateOnRepeat: false });
  });

  it("resets for XID 74 and tells a person to check the links (NVIDIA's WORKFLOW_NVLINK_ERR)", () => {
    expect(describeXid(74)).toMatchObject({
      action: 'quarantine-gpu',
      then: ['reboot-node', 'replace-node'],
      notify: true,
    });
  });

  it('observes 147 and 148, whose every decode row is IGNORE; the other NVLink5 XIDs reset when undecoded', () => {
    for (const x of [147, 148]) expect(describeXid(x), `XID ${x}`).toMatchObject({ action: 'observe', then: [] });
    for (const x of [144, 145, 146, 149, 150]) expect(describeXid(x).action, `XID ${x}`).toBe('quarantine-gpu');
  });

  it("quarantines the GPU and tells a person only for codes NVIDIA's catalog does not list, 999 included", () => {
    for (const xid of [999, 173, 12345])
      expect(describeXid(xid)).toMatchObject({ listed: false, action: 'quarantine-gpu', then: [], notify: true });
    // Listed but "Unused" in NVIDIA's catalog: CONTACT_SUPPORT, a person looks; nothing is fenced.
    for (const xid of [1, 9, 61, 91])
      expect(describeXid(xid), `XID ${xid}`).toMatchObject({
        listed: true,
        nvidiaAction: 'CONTACT_SUPPORT',
        action: 'observe',
        notify: true,
      });
  });

  it('follows the current catalog where it corrected older tables (review of 2026-11-23)', () => {
    for (const xid of [61, 142, 160])
      expect(describeXid(xid), `XID ${xid}`).toMatchObject({ action: 'observe', then: [], notify: true });
    expect(describeXid(142).nvidiaAction).toBe('CONTACT_SUPPORT');
    expect(describeXid(160).nvidiaAction).toBe('IGNORE');
  });

  it("follows NVIDIA's catalog for 159 and 161 and, where it names no bucket (162–172), never drains a node", () => {
    expect(describeXid(159)).toMatchObject({ nvidiaAction: 'CHECK_UVM', action: 'observe', notify: true });
    expect(describeXid(161)).toMatchObject({ nvidiaAction: 'IGNORE', action: 'observe', notify: true });
    for (const xid of [162, 163, 164, 165])
      expect(describeXid(xid), `XID ${xid}`).toMatchObject({ nvidiaAction: 'NONE_GIVEN', action: 'observe', then: [] });
    for (const xid of [166, 167, 168, 169, 170])
      expect(describeXid(xid), `XID ${xid}`).toMatchObject({
        nvidiaAction: 'NONE_GIVEN',
        action: 'quarantine-gpu',
        notify: true,
      });
    for (const xid of [171, 172])
      expect(describeXid(xid), `XID ${xid}`).toMatchObject({ action: 'quarantine-gpu', then: describeXid(48).then });
  });

  it('only uses known actions', () => {
    for (const info of XID_CATALOG.values()) {
      for (const a of [info.action, ...info.then]) expect(REMEDIATION_ACTIONS).toContain(a);
    }
  });
});
