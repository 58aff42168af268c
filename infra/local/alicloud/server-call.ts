import { CloudError } from './cloud.ts';

/** One OpenAPI call as the endpoint parsed it (server.ts), and the readers of its parameters. */
export type Json = Record<string, unknown>;

export interface Call {
  action: string;
  method: string;
  segs: string[];
  query: URLSearchParams;
  body: string;
  contentType: string;
}

export const bool = (v: string | null | undefined, dflt: boolean): boolean =>
  v === null || v === undefined || v === '' ? dflt : v === 'true';

export function intParam(v: unknown, name: string): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n))
    throw new CloudError(400, 'InvalidParameter', `${name} must be an integer (got ${JSON.stringify(v)})`);
  return n;
}

export function jsonList(v: string | null, name: string): string[] {
  if (v === null || v === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    throw new CloudError(400, 'InvalidParameter', `${name} must be a JSON array of strings, e.g. ["i-abc"] (got ${v})`);
  }
  if (!Array.isArray(parsed) || parsed.some((x) => typeof x !== 'string'))
    throw new CloudError(400, 'InvalidParameter', `${name} must be a JSON array of strings (got ${v})`);
  return parsed as string[];
}
