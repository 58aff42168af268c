/**
 * The few protobuf bodies clients send the simulated API server. kubectl sends built-in kinds it
 * creates through the typed clientset as `application/vnd.kubernetes.protobuf` (`kubectl auth can-i`'s
 * SelfSubjectAccessReview): the magic `k8s\0`, then a runtime.Unknown { TypeMeta typeMeta = 1 { apiVersion
 * = 1; kind = 2 }; bytes raw = 2 } (k8s.io/apimachinery pkg/runtime/serializer/protobuf, pkg/runtime/
 * generated.proto), whose `raw` is the kind's message from k8s.io/api <group>/<version>/generated.proto.
 * Written by hand from those .proto files (protobuf.dev/programming-guides/encoding): keys are varints
 * `(field << 3) | wire type`, strings and messages length-delimited; unknown fields are skipped.
 */
export const PROTOBUF = 'application/vnd.kubernetes.protobuf';
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** Each length-delimited field of a message, by number (repeated ones in order). */
export function fieldsOf(b: Buffer): Map<number, Buffer[]> {
  const out = new Map<number, Buffer[]>();
  let at = 0;
  const varint = (): number => {
    let n = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= b.length || shift > 49) throw new Error('truncated varint');
      const byte = b[at++]!;
      n += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return n;
    }
  };
  while (at < b.length) {
    const key = varint();
    const wire = key % 8;
    if (wire === 0) void varint();
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const len = varint();
      if (at + len > b.length) throw new Error('truncated field');
      const field = Math.floor(key / 8);
      out.set(field, [...(out.get(field) ?? []), b.subarray(at, at + len)]);
      at += len;
    } else throw new Error(`wire type ${wire} not expected`);
  }
  if (at > b.length) throw new Error('truncated field');
  return out;
}

const text = (f: Map<number, Buffer[]>, n: number) => f.get(n)?.[0]?.toString('utf8');

/** The envelope: the kind's TypeMeta and its message bytes. */
export function unwrap(body: Buffer): { apiVersion?: string; kind?: string; raw: Buffer } {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC)) throw new Error('not a Kubernetes protobuf body');
  const unknown = fieldsOf(body.subarray(4));
  const typeMeta = fieldsOf(unknown.get(1)?.[0] ?? Buffer.alloc(0));
  return { apiVersion: text(typeMeta, 1), kind: text(typeMeta, 2), raw: unknown.get(2)?.[0] ?? Buffer.alloc(0) };
}

/** Drops the fields proto3 left unset, as the JSON a client would have sent leaves them out. */
function strings(f: Map<number, Buffer[]>, names: Record<number, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, name] of Object.entries(names)) {
    const v = text(f, Number(n));
    if (v !== undefined && v !== '') out[name] = v;
  }
  return out;
}

/**
 * k8s.io/api authorization/v1 generated.proto: SelfSubjectAccessReview { spec = 2 }, its spec
 * { ResourceAttributes resourceAttributes = 1; NonResourceAttributes nonResourceAttributes = 2 },
 * ResourceAttributes { namespace = 1; verb = 2; group = 3; version = 4; resource = 5; subresource = 6;
 * name = 7 }, NonResourceAttributes { path = 1; verb = 2 }.
 */
export function decodeSelfSubjectAccessReview(raw: Buffer): object {
  const review = fieldsOf(raw);
  const spec = fieldsOf(review.get(2)?.[0] ?? Buffer.alloc(0));
  const r = spec.get(1)?.[0];
  const n = spec.get(2)?.[0];
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: {
      ...(r
        ? {
            resourceAttributes: strings(fieldsOf(r), {
              1: 'namespace',
              2: 'verb',
              3: 'group',
              4: 'version',
              5: 'resource',
              6: 'subresource',
              7: 'name',
            }),
          }
        : {}),
      ...(n ? { nonResourceAttributes: strings(fieldsOf(n), { 1: 'path', 2: 'verb' }) } : {}),
    },
  };
}
