/**
 * The node agent's protobuf decoder for the kubelet's PodResources v1 answers, written by hand from
 * kubernetes/kubelet pkg/apis/podresources/v1/api.proto (commit 63b32497): only the fields the agent
 * reads — pod name and namespace, each container's devices (resource name, device IDs) and DRA
 * claims (claim, driver, pool, device). Everything else (cpu_ids, memory, topology, CDI names, fields
 * a later kubelet adds) is skipped by its wire type, as protobuf parsers skip unknown fields
 * (protobuf.dev/programming-guides/encoding). Independent of the simulator's encoder on purpose.
 */

export interface PodDevices {
  resourceName: string;
  deviceIds: string[];
}
export interface PodClaimDevice {
  driver: string;
  pool: string;
  device: string;
}
export interface PodClaim {
  claimName: string;
  claimNamespace: string;
  devices: PodClaimDevice[];
}
export interface PodContainer {
  name: string;
  devices: PodDevices[];
  claims: PodClaim[];
}
export interface PodResourcesEntry {
  name: string;
  namespace: string;
  containers: PodContainer[];
}

export class ProtoError extends Error {
  override name = 'ProtoError';
}

/** Fields of one message: number → raw values (varints as bigint, length-delimited as bytes). */
type Field = { no: number; wire: number; varint?: bigint; bytes?: Buffer };

function fields(b: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let n = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (at >= b.length) throw new ProtoError('truncated varint');
      const byte = b[at++]!;
      n |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return n;
    }
    throw new ProtoError('varint too long');
  };
  while (at < b.length) {
    const key = varint();
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (no === 0) throw new ProtoError('field number 0');
    if (wire === 0) out.push({ no, wire, varint: varint() });
    else if (wire === 2) {
      const len = Number(varint());
      if (at + len > b.length) throw new ProtoError(`field ${no} runs past its message`);
      out.push({ no, wire, bytes: b.subarray(at, at + len) });
      at += len;
    } else if (wire === 1 || wire === 5) {
      at += wire === 1 ? 8 : 4;
      if (at > b.length) throw new ProtoError(`field ${no} runs past its message`);
    } else throw new ProtoError(`wire type ${wire} (field ${no}) is not one proto3 writes`);
  }
  return out;
}

const text = (f: Field[], no: number): string => {
  const last = f.filter((x) => x.no === no && x.bytes).at(-1); // proto3: the last one wins
  return last?.bytes?.toString('utf8') ?? '';
};
const texts = (f: Field[], no: number): string[] =>
  f.filter((x) => x.no === no && x.bytes).map((x) => x.bytes!.toString('utf8'));
const messages = (f: Field[], no: number): Buffer[] => f.filter((x) => x.no === no && x.bytes).map((x) => x.bytes!);

// ContainerDevices: resource_name = 1, device_ids = 2 (topology = 3 skipped)
function devices(b: Buffer): PodDevices {
  const f = fields(b);
  return { resourceName: text(f, 1), deviceIds: texts(f, 2) };
}

// DynamicResource: claim_name = 2, claim_namespace = 3, claim_resources = 4;
// ClaimResource: driver_name = 2, pool_name = 3, device_name = 4 (cdi_devices = 1, share_id = 5 skipped)
function claim(b: Buffer): PodClaim {
  const f = fields(b);
  return {
    claimName: text(f, 2),
    claimNamespace: text(f, 3),
    devices: messages(f, 4).map((r) => {
      const g = fields(r);
      return { driver: text(g, 2), pool: text(g, 3), device: text(g, 4) };
    }),
  };
}

// ContainerResources: name = 1, devices = 2, dynamic_resources = 5 (cpu_ids = 3, memory = 4 skipped)
function container(b: Buffer): PodContainer {
  const f = fields(b);
  return { name: text(f, 1), devices: messages(f, 2).map(devices), claims: messages(f, 5).map(claim) };
}

// PodResources: name = 1, namespace = 2, containers = 3 (cpu_ids = 4, memory = 5 skipped)
function pod(b: Buffer): PodResourcesEntry {
  const f = fields(b);
  return { name: text(f, 1), namespace: text(f, 2), containers: messages(f, 3).map(container) };
}

/** ListPodResourcesResponse: pod_resources = 1. */
export function decodeListResponse(b: Buffer): PodResourcesEntry[] {
  return messages(fields(b), 1).map(pod);
}

/** AllocatableResourcesResponse: devices = 1 (cpu_ids = 2, memory = 3 skipped). */
export function decodeAllocatableResponse(b: Buffer): PodDevices[] {
  return messages(fields(b), 1).map(devices);
}
