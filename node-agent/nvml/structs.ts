/**
 * The NVML ABI's structs as koffi types (nvml.h layouts; sizes in each comment), for ffi.ts's
 * bindings and the decoders above it. Declared once, at module scope, and anonymous: named koffi
 * types are process-global, so a second evaluation of this module would fail with a duplicate name.
 */
import koffi from 'koffi';

const uint = 'uint32';
const ulonglong = 'uint64';

export const PciInfo = koffi.struct({
  busIdLegacy: koffi.array('char', 16, 'String'),
  domain: uint,
  bus: uint,
  device: uint,
  pciDeviceId: uint,
  pciSubSystemId: uint,
  busId: koffi.array('char', 32, 'String'),
});
export const Memory = koffi.struct({ total: ulonglong, free: ulonglong, used: ulonglong });
export const Utilization = koffi.struct({ gpu: uint, memory: uint });
/** nvmlProcessInfo_t as filled by nvmlDeviceGetComputeRunningProcesses_v3 (24 bytes). */
export const ProcessInfo = koffi.struct({
  pid: uint,
  usedGpuMemory: ulonglong,
  gpuInstanceId: uint,
  computeInstanceId: uint,
});
/** nvmlEventData_t (32 bytes: device 0, eventType 8, eventData 16, GI 24, CI 28). */
export const EventData = koffi.struct({
  device: 'uint64',
  eventType: ulonglong,
  eventData: ulonglong,
  gpuInstanceId: uint,
  computeInstanceId: uint,
});
export const Placement = koffi.struct({ start: uint, size: uint });
export const GpuInstanceProfileInfo = koffi.struct({
  id: uint,
  isP2pSupported: uint,
  sliceCount: uint,
  instanceCount: uint,
  multiprocessorCount: uint,
  copyEngineCount: uint,
  decoderCount: uint,
  encoderCount: uint,
  jpegCount: uint,
  ofaCount: uint,
  memorySizeMB: ulonglong,
});
/** nvmlGpuInstanceProfileInfo_v2_t (152 bytes): the v1 fields after a version, and NVML's own name ("MIG 1g.18gb"). */
export const GpuInstanceProfileInfoV2 = koffi.struct({
  version: uint,
  id: uint,
  isP2pSupported: uint,
  sliceCount: uint,
  instanceCount: uint,
  multiprocessorCount: uint,
  copyEngineCount: uint,
  decoderCount: uint,
  encoderCount: uint,
  jpegCount: uint,
  ofaCount: uint,
  memorySizeMB: ulonglong,
  name: koffi.array('char', 96, 'String'),
});
export const GpuInstanceInfo = koffi.struct({ device: 'uint64', id: uint, profileId: uint, placement: Placement });
/** nvmlFieldValue_t (40 bytes); the value union is read as its raw 8 bytes. */
export const FieldValue = koffi.struct({
  fieldId: uint,
  scopeId: uint,
  timestamp: 'int64',
  latencyUsec: 'int64',
  valueType: uint,
  nvmlReturn: 'int32',
  value: 'uint64',
});

/**
 * nvmlGpuFabricInfo_v3_t (40 bytes): version, cluster UUID, probe status, clique, probe state,
 * health mask, health summary. Version 2 is the same without the summary (36 bytes).
 */
export const GpuFabricInfoV3 = koffi.struct({
  version: uint,
  clusterUuid: koffi.array('uint8', 16, 'Array'),
  status: 'int32',
  cliqueId: uint,
  state: 'uint8',
  healthMask: uint,
  healthSummary: 'uint8',
});
/** nvmlEccSramErrorStatus_v1_t (104 bytes): SRAM error counters and whether the field-diag threshold is exceeded. */
export const EccSramErrorStatusV1 = koffi.struct({
  version: uint,
  aggregateUncParity: ulonglong,
  aggregateUncSecDed: ulonglong,
  aggregateCor: ulonglong,
  volatileUncParity: ulonglong,
  volatileUncSecDed: ulonglong,
  volatileCor: ulonglong,
  aggregateUncBucketL2: ulonglong,
  aggregateUncBucketSm: ulonglong,
  aggregateUncBucketPcie: ulonglong,
  aggregateUncBucketMcu: ulonglong,
  aggregateUncBucketOther: ulonglong,
  bThresholdExceeded: uint,
});
/** NVML_STRUCT_VERSION(x, v): the struct's size with the version in the top byte. */
export const structVersion = (size: number, version: number): number => (size | (version << 24)) >>> 0;
