/**
 * The shapes of NVIDIA's XID catalog as `nvidia.generated.ts` holds it (one row per sheet row of
 * NVIDIA's "Analyzing Xid Errors with the Xid Catalog" spreadsheet). Kept apart from the
 * generated file so the generator and the catalog agree on one definition.
 */

/** One row of NVIDIA's "Catalog" sheet, NVIDIA's words unchanged. */
export interface NvidiaXidEntry {
  code: number;
  mnemonic: string;
  description: string;
  /** "Resolution Bucket (Immediate Action)"; NONE_GIVEN where NVIDIA gives none yet (162–172 on 2025-10-29). */
  immediate: NvidiaBucket;
  /** "Resolution Bucket (Investigatory Action)"; '' where NVIDIA gives none. */
  investigatory: string;
}

/** The generated forms (generate.ts `render`): one catalog row, one decode unit with its rows. */
export type CatalogTuple = readonly [code: number, description: string, immediate: NvidiaBucket];
export type UnitTuple = readonly [
  xid: number,
  unit: string,
  intrinfoV1: string,
  intrinfoV2: string,
  rows: readonly (readonly [
    errorStatus: number,
    resolution: Nvlink5Resolution,
    investigatory: string,
    severity: string,
  ])[],
];

/** One row of NVIDIA's "XID 144-150 Decode" sheet. */
export interface Nvlink5DecodeRow {
  xid: number;
  unit: string;
  /** 32 characters, most significant bit first: `0`/`1` must match, `-` is any. */
  intrinfoV1: string;
  intrinfoV2: string;
  errorStatus: number;
  resolution: Nvlink5Resolution;
  investigatory: string;
  /** NVIDIA's "Non-fatal", "Fatal", "Link Fatal", … */
  severity: string;
  /** A second action NVIDIA names for some non-fatal rows (RESET_GPU), '' otherwise. */
  action2: string;
  hwSw: string;
  localRemote: string;
}

/**
 * NVIDIA's "Resolution Bucket (Immediate Action)" values as the catalog spells them, plus
 * `NONE_GIVEN` for a code NVIDIA lists without one. A new value in a new catalog stops the
 * generator (generate.ts): someone must decide what gpu-reflex does with it.
 */
export const NVIDIA_BUCKETS = [
  'IGNORE',
  'RESTART_APP',
  'RESET_GPU',
  'RESTART_BM',
  'RESTART_VM',
  'CHECK_MECHANICALS',
  'CONTACT_SUPPORT',
  'UPDATE_SWFW',
  /** Check the host's unified-memory (UVM) driver: XID 159. */
  'CHECK_UVM',
  /** Alone: restart Fabric Manager; with other XIDs: ignore it and follow them. */
  'WORKFLOW_XID_45',
  /** Reset the GPU (reboot if that fails); RMA only when the SRAM uncorrectable threshold is exceeded. */
  'WORKFLOW_XID_48',
  /** XID 74: reset the GPU or reboot, check the links, replace if it recurs. */
  'WORKFLOW_NVLINK_ERR',
  /** XIDs 144–150: decode intrinfo / errorStatus (nvlink5-decode.tsv), act on the row. */
  'WORKFLOW_NVLINK5_ERR',
  /** XID 154: obey the recovery action the driver names. */
  'XID_154',
  'NONE_GIVEN',
] as const;
export type NvidiaBucket = (typeof NVIDIA_BUCKETS)[number];

/** The resolutions of the XID 144–150 decode sheet. XID_154_EVAL: act on the XID 154 that follows. */
export const NVLINK5_RESOLUTIONS = ['IGNORE', 'RESET_GPU', 'XID_154_EVAL'] as const;
export type Nvlink5Resolution = (typeof NVLINK5_RESOLUTIONS)[number];
