import type { ServedApis } from './api-versions.ts';
import { apiVersionOf, type ResourceDef } from './resources.ts';
import { MERGE_KEYS, MERGE_PRIMITIVES } from './patch.ts';
import { KINDS, ObjectMeta, type FieldType, type Struct } from './schema.ts';

/**
 * The OpenAPI documents of the served kinds, built from the same Go-struct field types the server
 * validates with (schema.ts), in the published shape (https://kubernetes.io/docs/concepts/overview/
 * kubernetes-api/#openapi-interface-definition; kube-apiserver's /openapi/v3 discovery document):
 *
 * - `/openapi/v3`: `{ paths: { "api/v1": { serverRelativeURL } … } }`, one entry per served group/version;
 *   each document has `components.schemas` named like the real ones (`io.k8s.api.core.v1.NodeSpec`), a kind's
 *   schema carrying `x-kubernetes-group-version-kind`, nested structs as `allOf: [{ $ref }]`, and the PATCH
 *   operations with their `fieldValidation` parameter (what `kubectl apply --validate=strict` checks).
 *   `kubectl explain node.spec.taints` reads these.
 * - `/openapi/v2`: one Swagger 2.0 document with every definition (`$ref: #/definitions/…`), as JSON only:
 *   kubectl's v2 reader asks for protobuf, so kubectl uses v3; other clients read v2 as JSON.
 *
 * Descriptions are left out (the real ones are upstream's prose); `kubectl explain` prints `<empty>` for them.
 * Fields the server does not model are absent, and a kind it stores without a field list (RBAC, DRA, Secrets)
 * has only apiVersion, kind and metadata, with `x-kubernetes-preserve-unknown-fields`.
 */
const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const META_TYPES = new Set(['ObjectMeta', 'OwnerReference', 'LabelSelector', 'LabelSelectorRequirement']);

/** Required fields as k8s.io/api marks them (core/v1 types.go: a Taint's key and effect). */
const REQUIRED: Record<string, string[]> = { Taint: ['effect', 'key'], Toleration: [], Container: ['name'] };

/** `io.k8s.api.core.v1`, `io.k8s.api.rbac.v1`, … (k8s.io/api/<package>/<version>). */
function packageOf(r: ResourceDef): string {
  return `io.k8s.api.${r.group === '' ? 'core' : r.group.split('.')[0]}.${r.version}`;
}

type Schema = Record<string, unknown>;

/**
 * The strategic-merge extensions kube-openapi publishes for lists the Go types mark `patchStrategy:"merge"`
 * (the same table the server merges by, patch.ts): kubectl apply computes its patch from them once the
 * OpenAPI has schemas, so a list without them would be replaced whole where the real one merges.
 */
function patchMeta(field: string, t: FieldType): Schema {
  if (typeof t !== 'object' || !('list' in t)) return {};
  if (Object.hasOwn(MERGE_KEYS, field))
    return { 'x-kubernetes-patch-merge-key': MERGE_KEYS[field], 'x-kubernetes-patch-strategy': 'merge' };
  if (MERGE_PRIMITIVES.has(field)) return { 'x-kubernetes-patch-strategy': 'merge' };
  return {};
}

class Builder {
  readonly schemas: Record<string, Schema> = {};
  constructor(private readonly refPrefix: string) {}

  private nameOf(s: Struct, pkg: string): string {
    return META_TYPES.has(s.go) ? `${META}.${s.go}` : `${pkg}.${s.go}`;
  }

  /** A field's schema; a struct becomes a named component the field refers to. */
  field(t: FieldType, pkg: string): Schema {
    if (t === 'string') return { type: 'string' };
    if (t === 'bool') return { type: 'boolean' };
    if (t === 'int') return { type: 'integer', format: 'int64' };
    if (t === 'intOrString') return this.ref('io.k8s.apimachinery.pkg.util.intstr.IntOrString');
    if (t === 'quantity') return { $ref: `${this.refPrefix}io.k8s.apimachinery.pkg.api.resource.Quantity` };
    if (t === 'time') return { type: 'string', format: 'date-time' };
    if (t === 'any') return { type: 'object' };
    if ('map' in t) return { type: 'object', additionalProperties: this.field(t.map, pkg) };
    if ('list' in t) return { type: 'array', items: this.field(t.list, pkg) };
    return { ...this.ref(this.struct(t, pkg)), default: {} };
  }

  /** v3 publishes a reference beside other keywords as allOf (kube-openapi); v2 as a bare $ref. */
  private ref(name: string): Schema {
    return this.refPrefix.startsWith('#/components')
      ? { allOf: [{ $ref: `${this.refPrefix}${name}` }] }
      : { $ref: `${this.refPrefix}${name}` };
  }

  struct(s: Struct, pkg: string, extra: Schema = {}): string {
    const name = this.nameOf(s, pkg);
    if (this.schemas[name]) return name;
    this.schemas[name] = {}; // placeholder: a struct may (indirectly) hold itself
    const properties = Object.fromEntries(
      Object.entries(s.fields).map(([k, t]) => [k, { ...this.field(t, pkg), ...patchMeta(k, t) }]),
    );
    const required = REQUIRED[s.go];
    this.schemas[name] = {
      type: 'object',
      properties,
      ...(required && required.length > 0 ? { required } : {}),
      ...extra,
    };
    return name;
  }

  kind(r: ResourceDef): string {
    const pkg = packageOf(r);
    const fields = KINDS[r.kind];
    const head = {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: this.field(ObjectMeta, pkg),
    };
    const gvk = { 'x-kubernetes-group-version-kind': [{ group: r.group, kind: r.kind, version: r.version }] };
    const name = `${pkg}.${r.kind}`;
    if (!fields) {
      this.schemas[name] = {
        type: 'object',
        properties: head,
        'x-kubernetes-preserve-unknown-fields': true,
        ...gvk,
      };
      return name;
    }
    this.struct(fields, pkg, gvk);
    const built = this.schemas[name]!;
    built.properties = { ...head, ...(built.properties as Schema) };
    return name;
  }

  scalars(): void {
    // v3: the types' OpenAPIV3OneOfTypes (string|number, integer|string); v2: a string with a format
    // (k8s.io/apimachinery pkg/api/resource/quantity.go, pkg/util/intstr/intstr.go).
    const v3 = this.refPrefix.startsWith('#/components');
    this.schemas['io.k8s.apimachinery.pkg.api.resource.Quantity'] = v3
      ? { oneOf: [{ type: 'string' }, { type: 'number' }] }
      : { type: 'string' };
    this.schemas['io.k8s.apimachinery.pkg.util.intstr.IntOrString'] = v3
      ? { oneOf: [{ type: 'integer' }, { type: 'string' }] }
      : { type: 'string', format: 'int-or-string' };
  }
}

function gvPath(gv: string): string {
  return gv.includes('/') ? `apis/${gv}` : `api/${gv}`;
}

const storedKinds = (apis: ServedApis): ResourceDef[] => apis.resources();

export function openApiRoot(apis: ServedApis): object {
  const gvs = [...new Set(storedKinds(apis).map(apiVersionOf))];
  return {
    paths: Object.fromEntries(
      gvs.map((gv) => [gvPath(gv), { serverRelativeURL: `/openapi/v3/${gvPath(gv)}?hash=sim-${apis.version}` }]),
    ),
  };
}

export function openApiGroupVersion(apis: ServedApis, path: string): object | undefined {
  const defs = storedKinds(apis).filter((r) => gvPath(apiVersionOf(r)) === path);
  if (defs.length === 0) return undefined;
  const b = new Builder('#/components/schemas/');
  b.scalars();
  const paths: Record<string, object> = {};
  for (const r of defs) {
    b.kind(r);
    const prefix = `/${gvPath(apiVersionOf(r))}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}/{name}`;
    if (!(r.verbs ?? ['patch']).includes('patch')) continue;
    paths[prefix] = {
      patch: {
        operationId: `patch${r.kind}`,
        parameters: ['dryRun', 'fieldManager', 'fieldValidation', 'force'].map((name) => ({
          name,
          in: 'query',
          schema: { type: name === 'force' ? 'boolean' : 'string' },
        })),
        responses: { '200': { description: 'OK' } },
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind },
      },
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: `v${apis.version}.0` },
    paths,
    components: { schemas: b.schemas },
  };
}

export function openApiV2(apis: ServedApis): object {
  const b = new Builder('#/definitions/');
  b.scalars();
  for (const r of storedKinds(apis)) b.kind(r);
  return {
    swagger: '2.0',
    info: { title: 'Kubernetes', version: `v${apis.version}.0` },
    paths: {},
    definitions: b.schemas,
  };
}
