import type { IncomingMessage } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { jsonTextDepth } from '../../../events/json-depth.ts';
import { readBody as readLimited } from '../http-kit.ts';
import { depthOf, MAX_BODY_DEPTH, tooDeep } from './body-types.ts';
import { errors } from './errors.ts';
import { decodeSelfSubjectAccessReview, PROTOBUF, unwrap } from './protobuf.ts';
import { apiVersionOf, type ResourceDef } from './resources.ts';

/** Request bodies as the real API server reads them: size limit, JSON or YAML, depth, kind and version. */

/**
 * kube-apiserver's MaxRequestBodyBytes default (k8s.io/apiserver pkg/server/config.go: 3 MiB); a larger
 * body is `413 RequestEntityTooLarge`, "Request entity too large: limit is 3145728" (handlers/rest.go
 * limitedReadBody, apimachinery NewRequestEntityTooLargeError).
 */
const MAX_BODY = 3 * 1024 * 1024;

export function readBytes(req: IncomingMessage): Promise<Buffer> {
  return readLimited(req, MAX_BODY, () => errors.tooLarge(`Request entity too large: limit is ${MAX_BODY}`));
}

export function readBody(req: IncomingMessage): Promise<string> {
  return readBytes(req).then((b) => b.toString('utf8'));
}

/**
 * A created or replaced object must be of the endpoint's kind and version when it says (a client
 * may leave them out), as the real decoder checks before anything else.
 */
export function checkKind(r: ResourceDef, body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const { apiVersion, kind } = body as { apiVersion?: unknown; kind?: unknown };
  if (apiVersion !== undefined && apiVersion !== apiVersionOf(r))
    throw errors.badRequest(
      `the API version in the data (${String(apiVersion)}) does not match the expected API version ` +
        `(${apiVersionOf(r)})`,
    );
  if (kind !== undefined && kind !== r.kind)
    throw errors.badRequest(`the kind in the data (${String(kind)}) does not match the expected kind (${r.kind})`);
  return body;
}

/**
 * JSON (V8's parser is iterative) or YAML, then refused when nested deeper than MAX_BODY_DEPTH,
 * before any recursive code (patches, clones, JSON.stringify) walks it. The YAML parser recurses:
 * its stack overflow is a parse error here, and `prettyErrors` stays off because rendering the
 * context of an error in a deeply nested document exhausts memory and kills the process.
 */
export function decode(text: string, contentType: string): unknown {
  if (text.trim() === '') return undefined;
  const yaml = contentType.includes('yaml');
  // Flow-collection nesting of the YAML text, before the parser sees it (it needs ~1 s to fail
  // on a 100,000-deep body; this needs a millisecond). It can overcount brackets in plain or
  // single-quoted scalars, never undercount.
  if (yaml && jsonTextDepth(text, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) throw tooDeep();
  let value: unknown;
  try {
    value = yaml ? parseYaml(text, { prettyErrors: false }) : JSON.parse(text);
  } catch (err) {
    if (/Maximum call stack/.test((err as Error).message)) throw tooDeep();
    throw errors.badRequest(`couldn't decode the request body: ${(err as Error).message}`);
  }
  if (depthOf(value, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) throw tooDeep();
  return value;
}

/** kubectl sends its SelfSubjectAccessReview as protobuf (protobuf.ts); other clients as JSON or YAML. */
export async function reviewBody(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type'] ?? 'application/json';
  if (!type.startsWith(PROTOBUF)) return decode(await readBody(req), type);
  try {
    const { kind, raw } = unwrap(await readBytes(req));
    if (kind !== 'SelfSubjectAccessReview') throw new Error(`kind ${kind ?? '(none)'}`);
    return decodeSelfSubjectAccessReview(raw);
  } catch (err) {
    throw errors.badRequest(`couldn't decode the request body: ${(err as Error).message}`);
  }
}
