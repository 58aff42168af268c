import koffi from 'koffi';
import { nvmlReturnName, type Nvml } from '../../node-agent/nvml/nvml.ts';

/**
 * nvml-probe.ts's `raw` layer: each NVML call the agent makes or could make, with its return code, through
 * koffi directly (temperature thresholds, field values, PCIe link, fabric, profile names by NVML), and the
 * sizes of the structs it passes.
 */
export function rawProbe(nvml: Nvml, count: number): { raw: unknown[]; structSizes: Record<string, number> } {
  // Raw calls, each with its return code.
  const lib = koffi.load(nvml.lib.path);
  const h = koffi.pointer(koffi.opaque());
  const call = (
    name: string,
    args: unknown[],
    types: unknown[],
  ): { rc: number; rcName: string } | { missing: true } => {
    let fn;
    try {
      fn = lib.func(name, 'int32', types as never[]);
    } catch {
      return { missing: true };
    }
    const rc = fn(...args) as number;
    return { rc, rcName: nvmlReturnName(rc) };
  };
  const u32 = koffi.out(koffi.pointer('uint32'));
  const FieldValue = koffi.struct({
    fieldId: 'uint32',
    scopeId: 'uint32',
    timestamp: 'int64',
    latencyUsec: 'int64',
    valueType: 'uint32',
    nvmlReturn: 'int32',
    value: 'uint64',
  });
  const FabricV3 = koffi.struct({
    version: 'uint32',
    clusterUuid: koffi.array('uint8', 16, 'Array'),
    status: 'int32',
    cliqueId: 'uint32',
    state: 'uint8',
    healthMask: 'uint32',
    healthSummary: 'uint8',
  });
  const ProfileV2 = koffi.struct({
    version: 'uint32',
    id: 'uint32',
    isP2pSupported: 'uint32',
    sliceCount: 'uint32',
    instanceCount: 'uint32',
    multiprocessorCount: 'uint32',
    copyEngineCount: 'uint32',
    decoderCount: 'uint32',
    encoderCount: 'uint32',
    jpegCount: 'uint32',
    ofaCount: 'uint32',
    memorySizeMB: 'uint64',
    name: koffi.array('char', 96, 'String'),
  });
  const SramV1 = koffi.struct({
    version: 'uint32',
    aggregateUncParity: 'uint64',
    aggregateUncSecDed: 'uint64',
    aggregateCor: 'uint64',
    volatileUncParity: 'uint64',
    volatileUncSecDed: 'uint64',
    volatileCor: 'uint64',
    aggregateUncBucketL2: 'uint64',
    aggregateUncBucketSm: 'uint64',
    aggregateUncBucketPcie: 'uint64',
    aggregateUncBucketMcu: 'uint64',
    aggregateUncBucketOther: 'uint64',
    bThresholdExceeded: 'uint32',
  });
  const raw: unknown[] = [];
  const structSizes = {
    fabricV3: koffi.sizeof(FabricV3),
    profileV2: koffi.sizeof(ProfileV2),
    fieldValue: koffi.sizeof(FieldValue),
    sramV1: koffi.sizeof(SramV1),
  };
  const FIELDS: Record<string, number> = {
    memoryTemp: 82,
    pcieReplay: 94,
    pcieReplayRollover: 95,
    nvlinkCrcFlitTotal: 38,
    nvlinkCrcDataTotal: 45,
    nvlinkReplayTotal: 52,
    nvlinkRecoveryTotal: 59,
    nvlinkGetState: 165,
    pcieCorrectable: 173,
    pcieNonFatal: 179,
    pcieFatal: 180,
    recoveryAction: 230,
    nvlinkLinkCount: 19,
  };
  for (let index = 0; index < count; index++) {
    const device = nvml.device(index).handle;
    const r: Record<string, unknown> = { index };
    raw.push(r);
    const thresholds: Record<string, unknown> = {};
    for (const [name, type] of Object.entries({
      shutdown: 0,
      slowdown: 1,
      memMax: 2,
      gpuMax: 3,
      acousticMin: 4,
      acousticCurr: 5,
      acousticMax: 6,
      gpsCurr: 7,
    })) {
      const v: [number] = [0];
      thresholds[name] = {
        ...call('nvmlDeviceGetTemperatureThreshold', [device, type, v], [h, 'int32', u32]),
        value: v[0],
      };
    }
    r.temperatureThresholds = thresholds;
    const pcie: Record<string, unknown> = {};
    for (const name of [
      'nvmlDeviceGetCurrPcieLinkGeneration',
      'nvmlDeviceGetMaxPcieLinkGeneration',
      'nvmlDeviceGetGpuMaxPcieLinkGeneration',
      'nvmlDeviceGetCurrPcieLinkWidth',
      'nvmlDeviceGetMaxPcieLinkWidth',
      'nvmlDeviceGetPcieReplayCounter',
      'nvmlDeviceGetPcieSpeed',
    ]) {
      const v: [number] = [0];
      pcie[name] = { ...call(name, [device, v], [h, u32]), value: v[0] };
    }
    r.pcie = pcie;
    const codec: Record<string, unknown> = {};
    for (const name of [
      'nvmlDeviceGetEncoderUtilization',
      'nvmlDeviceGetDecoderUtilization',
      'nvmlDeviceGetJpgUtilization',
      'nvmlDeviceGetOfaUtilization',
    ]) {
      const v: [number] = [0];
      const period: [number] = [0];
      codec[name] = { ...call(name, [device, v, period], [h, u32, u32]), value: v[0], samplingPeriodUs: period[0] };
    }
    r.codec = codec;
    const ids = Object.entries(FIELDS);
    const buf = Buffer.alloc(ids.length * FieldValue.size);
    ids.forEach(([, id], i) =>
      koffi.encode(buf, i * FieldValue.size, FieldValue, {
        fieldId: id,
        scopeId: 0,
        timestamp: 0,
        latencyUsec: 0,
        valueType: 0,
        nvmlReturn: 0,
        value: 0,
      }),
    );
    const fv = call('nvmlDeviceGetFieldValues', [device, ids.length, buf], [h, 'int32', 'void *']);
    r.fieldValues = {
      ...fv,
      values: Object.fromEntries(
        ids.map(([name], i) => {
          const v = koffi.decode(buf, i * FieldValue.size, FieldValue) as {
            valueType: number;
            nvmlReturn: number;
            value: bigint | number;
            timestamp: bigint | number;
          };
          return [
            name,
            {
              rc: v.nvmlReturn,
              rcName: nvmlReturnName(v.nvmlReturn),
              valueType: v.valueType,
              raw: String(v.value),
              timestamp: String(v.timestamp),
            },
          ];
        }),
      ),
    };
    const fabric = Buffer.alloc(FabricV3.size);
    koffi.encode(fabric, FabricV3, {
      version: FabricV3.size | (3 << 24),
      clusterUuid: new Array(16).fill(0),
      status: 0,
      cliqueId: 0,
      state: 0,
      healthMask: 0,
      healthSummary: 0,
    });
    r.fabricV3 = {
      ...call('nvmlDeviceGetGpuFabricInfoV', [device, fabric], [h, 'void *']),
      value: koffi.decode(fabric, FabricV3),
    };
    const profiles: unknown[] = [];
    for (let p = 0; p < 16; p++) {
      const b = Buffer.alloc(ProfileV2.size);
      b.writeUInt32LE(ProfileV2.size | (2 << 24), 0);
      const res = call('nvmlDeviceGetGpuInstanceProfileInfoV', [device, p, b], [h, 'uint32', 'void *']);
      profiles.push({
        profile: p,
        ...res,
        ...('rc' in res && res.rc === 0 ? { value: koffi.decode(b, ProfileV2) } : {}),
      });
    }
    r.profileInfoV2 = profiles;
    const links: unknown[] = [];
    for (let link = 0; link < 18; link++) {
      const state: [number] = [0];
      const s = call(
        'nvmlDeviceGetNvLinkState',
        [device, link, state],
        [h, 'uint32', koffi.out(koffi.pointer('int32'))],
      );
      const counters: Record<string, unknown> = {};
      for (const [name, counter] of Object.entries({ replay: 0, recovery: 1, crcFlit: 2, crcData: 3 })) {
        const v: [bigint | number] = [0];
        counters[name] = {
          ...call(
            'nvmlDeviceGetNvLinkErrorCounter',
            [device, link, counter, v],
            [h, 'uint32', 'int32', koffi.out(koffi.pointer('uint64'))],
          ),
          value: String(v[0]),
        };
      }
      links.push({ link, state: { ...s, value: state[0] }, counters });
    }
    r.nvlinks = links;
    r.eccMode = (() => {
      const cur: [number] = [0];
      const pend: [number] = [0];
      return {
        ...call(
          'nvmlDeviceGetEccMode',
          [device, cur, pend],
          [h, koffi.out(koffi.pointer('int32')), koffi.out(koffi.pointer('int32'))],
        ),
        current: cur[0],
        pending: pend[0],
      };
    })();
    const sram = Buffer.alloc(SramV1.size);
    sram.writeUInt32LE(SramV1.size | (1 << 24), 0);
    const sramRes = call('nvmlDeviceGetSramEccErrorStatus', [device, sram], [h, 'void *']);
    r.sramEccErrorStatus = {
      ...sramRes,
      ...('rc' in sramRes && sramRes.rc === 0 ? { value: koffi.decode(sram, SramV1) } : {}),
    };
  }
  return { raw, structSizes };
}
