/**
 * The simulated kubelet's side of PodResources v1 on the wire: protobuf encoding of its responses and
 * decoding of its requests, written by hand from kubernetes/kubelet pkg/apis/podresources/v1/api.proto
 * (commit 63b32497; copy in test/fixtures/podresources/api.proto). Field numbers below are the .proto's.
 * Written apart from the node agent's decoder (node-agent/collectors/pod-resources-wire.ts) on purpose:
 * a simulator sharing the client's codec would agree with the client's bugs.
 *
 * Protobuf encoding (protobuf.dev/programming-guides/encoding): each field is a varint key
 * `(number << 3) | wire type`; strings and embedded messages are wire type 2 (length-delimited);
 * proto3 leaves fields at their default (empty string, empty list) off the wire.
 */

export interface ContainerDevicesMsg {
  resourceName: string;
  deviceIds: string[];
  /** NUMA node IDs (TopologyInfo.nodes[].ID). */
  numaNodes: number[];
}
export interface ClaimResourceMsg {
  cdiDevices: string[];
  driverName: string;
  poolName: string;
  deviceName: string;
  shareId?: string;
}
export interface DynamicResourceMsg {
  claimName: string;
  claimNamespace: string;
  claimResources: ClaimResourceMsg[];
}
export interface ContainerResourcesMsg {
  name: string;
  devices: ContainerDevicesMsg[];
  dynamicResources: DynamicResourceMsg[];
}
export interface PodResourcesMsg {
  name: string;
  namespace: string;
  containers: ContainerResourcesMsg[];
}

/** A little growing buffer of protobuf fields. */
class Out {
  private readonly parts: Buffer[] = [];
  varint(n: number): this {
    const bytes: number[] = [];
    let v = BigInt(n);
    do {
      let b = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) b |= 0x80;
      bytes.push(b);
    } while (v > 0n);
    this.parts.push(Buffer.from(bytes));
    return this;
  }
  /** Field `no`, wire type 2, with these bytes. */
  bytes(no: number, b: Buffer): this {
    this.varint((no << 3) | 2).varint(b.length);
    this.parts.push(b);
    return this;
  }
  /** A proto3 string field; the empty string is the default and stays off the wire. */
  string(no: number, s: string | undefined, keepEmpty = false): this {
    if (s === undefined || (s === '' && !keepEmpty)) return this;
    return this.bytes(no, Buffer.from(s, 'utf8'));
  }
  message(no: number, b: Buffer): this {
    return this.bytes(no, b);
  }
  /** A proto3 int64 field (wire type 0); zero stays off the wire. */
  int64(no: number, n: number): this {
    return n === 0 ? this : this.varint(no << 3).varint(n);
  }
  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

// TopologyInfo { repeated NUMANode nodes = 1 }; NUMANode { int64 ID = 1 }
function topology(numa: readonly number[]): Buffer {
  const o = new Out();
  for (const id of numa) o.message(1, new Out().int64(1, id).done());
  return o.done();
}

// ContainerDevices { string resource_name = 1; repeated string device_ids = 2; TopologyInfo topology = 3 }
function containerDevices(d: ContainerDevicesMsg): Buffer {
  const o = new Out().string(1, d.resourceName);
  for (const id of d.deviceIds) o.string(2, id, true);
  if (d.numaNodes.length > 0) o.message(3, topology(d.numaNodes));
  return o.done();
}

// ClaimResource { repeated CDIDevice cdi_devices = 1; string driver_name = 2; string pool_name = 3;
//                 string device_name = 4; optional string share_id = 5 }; CDIDevice { string name = 1 }
function claimResource(c: ClaimResourceMsg): Buffer {
  const o = new Out();
  for (const name of c.cdiDevices) o.message(1, new Out().string(1, name).done());
  o.string(2, c.driverName).string(3, c.poolName).string(4, c.deviceName);
  // `optional`: present means set, even when empty.
  if (c.shareId !== undefined) o.string(5, c.shareId, true);
  return o.done();
}

// DynamicResource { string claim_name = 2; string claim_namespace = 3; repeated ClaimResource claim_resources = 4 }
function dynamicResource(d: DynamicResourceMsg): Buffer {
  const o = new Out().string(2, d.claimName).string(3, d.claimNamespace);
  for (const c of d.claimResources) o.message(4, claimResource(c));
  return o.done();
}

// ContainerResources { string name = 1; repeated ContainerDevices devices = 2; repeated int64 cpu_ids = 3;
//                      repeated ContainerMemory memory = 4; repeated DynamicResource dynamic_resources = 5 }
function containerResources(c: ContainerResourcesMsg): Buffer {
  const o = new Out().string(1, c.name);
  for (const d of c.devices) o.message(2, containerDevices(d));
  for (const d of c.dynamicResources) o.message(5, dynamicResource(d));
  return o.done();
}

// PodResources { string name = 1; string namespace = 2; repeated ContainerResources containers = 3; … }
function podResources(p: PodResourcesMsg): Buffer {
  const o = new Out().string(1, p.name).string(2, p.namespace);
  for (const c of p.containers) o.message(3, containerResources(c));
  return o.done();
}

/** ListPodResourcesResponse { repeated PodResources pod_resources = 1 } */
export function encodeListResponse(pods: readonly PodResourcesMsg[]): Buffer {
  const o = new Out();
  for (const p of pods) o.message(1, podResources(p));
  return o.done();
}

/** AllocatableResourcesResponse { repeated ContainerDevices devices = 1; repeated int64 cpu_ids = 2; … } */
export function encodeAllocatableResponse(devices: readonly ContainerDevicesMsg[]): Buffer {
  const o = new Out();
  for (const d of devices) o.message(1, containerDevices(d));
  return o.done();
}

/** GetPodResourcesResponse { PodResources pod_resources = 1 } */
export function encodeGetResponse(pod: PodResourcesMsg): Buffer {
  return new Out().message(1, podResources(pod)).done();
}

/**
 * GetPodResourcesRequest { string pod_name = 1; string pod_namespace = 2 }. Unknown fields are skipped,
 * as protobuf parsers do; a malformed message throws.
 */
export function decodeGetRequest(b: Buffer): { podName: string; podNamespace: string } {
  let at = 0;
  const varint = (): number => {
    let n = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (at >= b.length) throw new Error('truncated varint');
      const byte = b[at++]!;
      n |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return Number(n);
    }
  };
  const out = { podName: '', podNamespace: '' };
  while (at < b.length) {
    const key = varint();
    const wire = key & 7;
    if (wire === 0) void varint();
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const len = varint();
      if (at + len > b.length) throw new Error('truncated field');
      const text = b.subarray(at, at + len).toString('utf8');
      at += len;
      if (key >> 3 === 1) out.podName = text;
      if (key >> 3 === 2) out.podNamespace = text;
    } else throw new Error(`wire type ${wire} not expected`);
  }
  if (at > b.length) throw new Error('truncated field');
  return out;
}
