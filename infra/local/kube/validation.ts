import { typeMismatch } from './body-types.ts';
import { errors, failure, type Cause } from './errors.ts';
import type { ResourceDef } from './resources.ts';
import type { KubeObject } from './types.ts';

/**
 * What the real API server refuses before it stores anything: values of the wrong JSON type
 * (its decoder, body-types.ts), malformed names, label and annotation keys and values and oversized
 * annotations (ValidateObjectMeta). Each refusal names the field path. Bodies beside objects
 * (DeleteOptions, Eviction) are checked in delete-options.ts.
 */

// ---------------------------------------------------------------- ObjectMeta (apimachinery validation)

const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const NAME_PART_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric " +
  "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is " +
  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and " +
  "end with an alphanumeric character (e.g. 'example.com', regex used for validation is " +
  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with " +
  "an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is " +
  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
export const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
export const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and " +
  "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation " +
  "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
/** TotalAnnotationSizeLimitB: keys and values of all annotations together. */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

const quote = (v: string) => JSON.stringify(v.length > 256 ? `${v.slice(0, 256)}...` : v);
const invalidCause = (field: string, value: string, why: string): Cause => ({
  reason: 'FieldValueInvalid',
  message: `Invalid value: ${quote(value)}: ${why}`,
  field,
});

/** IsQualifiedName: `[prefix/]name`; the reasons it is not, in the real wording. */
export function qualifiedNameErrors(key: string): string[] {
  const parts = key.split('/');
  let name: string;
  const out: string[] = [];
  if (parts.length === 1) name = parts[0]!;
  else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) out.push('prefix part must be non-empty');
    else if (prefix.length > 253) out.push('prefix part must be no more than 253 characters');
    else if (!DNS1123_SUBDOMAIN.test(prefix)) out.push(`prefix part ${SUBDOMAIN_MSG}`);
  } else {
    return [
      `a qualified name ${NAME_PART_MSG.slice('name part '.length)} with an optional DNS subdomain prefix and '/' ` +
        `(e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) out.push('name part must be non-empty');
  else if (name.length > 63) out.push('name part must be no more than 63 characters');
  if (name.length > 0 && !NAME_PART.test(name)) out.push(NAME_PART_MSG);
  return out;
}

function metaCauses(r: ResourceDef, meta: Record<string, unknown>, creating: boolean): Cause[] {
  const causes: Cause[] = [];
  const name = meta.name;
  if (creating && typeof name === 'string' && name !== '') {
    const label = r.plural === 'namespaces';
    const max = label ? 63 : 253;
    if (name.length > max) causes.push(invalidCause('metadata.name', name, `must be no more than ${max} characters`));
    else if (!(label ? DNS1123_LABEL : DNS1123_SUBDOMAIN).test(name))
      causes.push(invalidCause('metadata.name', name, label ? LABEL_MSG : SUBDOMAIN_MSG));
  }
  for (const [k, v] of Object.entries((meta.labels ?? {}) as Record<string, string>)) {
    for (const why of qualifiedNameErrors(k)) causes.push(invalidCause('metadata.labels', k, why));
    if (typeof v !== 'string') continue;
    if (v.length > 63) causes.push(invalidCause('metadata.labels', v, 'must be no more than 63 characters'));
    if (!LABEL_VALUE.test(v)) causes.push(invalidCause('metadata.labels', v, LABEL_VALUE_MSG));
  }
  let bytes = 0;
  for (const [k, v] of Object.entries((meta.annotations ?? {}) as Record<string, string>)) {
    for (const why of qualifiedNameErrors(k.toLowerCase())) causes.push(invalidCause('metadata.annotations', k, why));
    bytes += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0);
  }
  if (bytes > MAX_ANNOTATIONS_BYTES)
    causes.push({
      reason: 'FieldValueTooLong',
      message: `Too long: must have at most ${MAX_ANNOTATIONS_BYTES} bytes`,
      field: 'metadata.annotations',
    });
  return causes;
}

export type WriteVerb = 'create' | 'update' | 'patch';

/**
 * Throws what the real server answers for an object it cannot store: a type the decoder refuses
 * (POST/PUT: 400 "cannot be handled as"; PATCH: 422 on the patched object), then metadata that
 * fails validation (422 Invalid with every cause).
 */
export function checkObject(r: ResourceDef, obj: KubeObject, verb: WriteVerb): void {
  const name = typeof obj.metadata?.name === 'string' ? obj.metadata.name : '';
  const wrong = typeMismatch(obj);
  if (wrong) {
    const cause: Cause = {
      reason: 'FieldValueInvalid',
      message: `Invalid value: ${quote(JSON.stringify(wrong.value) ?? 'null')}: ${wrong.message}`,
      field: wrong.field,
    };
    if (verb === 'patch') throw errors.invalidCauses(r, name, [cause]);
    throw failure(
      400,
      'BadRequest',
      `${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: ${wrong.message}`,
      { causes: [cause] },
    );
  }
  const causes = metaCauses(r, obj.metadata ?? {}, verb === 'create');
  if (causes.length > 0) throw errors.invalidCauses(r, name, causes);
}
