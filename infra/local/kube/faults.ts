import { ApiError } from './errors.ts';

/**
 * Failures a test asks the server to answer with, before the request reaches the cluster:
 * "the next PATCH of nodes/gpu-1 gets a 409", "the next 3 evictions get a 500". They let the
 * production adapter's retry and error paths run against the real wire format.
 */
export interface FaultSpec {
  /** HTTP method to match (any when absent). */
  method?: string;
  /** Matched against the URL path (`/api/v1/nodes/gpu-1`): substring or RegExp. Any when absent. */
  path?: string | RegExp;
  code: number;
  reason?: string;
  message?: string;
  /** How many matching requests fail (default 1). */
  times?: number;
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export class Faults {
  private readonly specs: (FaultSpec & { left: number })[] = [];
  /** Requests that were failed on purpose, for assertions: `PATCH /api/v1/nodes/gpu-1 → 409`. */
  readonly fired: string[] = [];

  inject(spec: FaultSpec): void {
    this.specs.push({ ...spec, left: spec.times ?? 1 });
  }

  clear(): void {
    this.specs.length = 0;
  }

  /** The error to answer `method path` with, if a fault matches; consumes one use. */
  take(method: string, path: string): ApiError | undefined {
    const spec = this.specs.find(
      (s) =>
        s.left > 0 &&
        (!s.method || s.method.toUpperCase() === method) &&
        (!s.path || (typeof s.path === 'string' ? path.includes(s.path) : s.path.test(path))),
    );
    if (!spec) return undefined;
    spec.left--;
    this.fired.push(`${method} ${path} → ${spec.code}`);
    const reason = spec.reason ?? REASONS[spec.code] ?? 'Unknown';
    return new ApiError({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: spec.message ?? `injected ${reason} for ${method} ${path}`,
      reason,
      code: spec.code,
    });
  }
}
