/**
 * The error hierarchy every adapter throws (Kubernetes, Alibaba Cloud, bus, chat).
 *
 * The retry meaning is decided once, here, by class: the functions' middy `onError` maps
 * `retryable` errors to "throw so the platform retries" and the rest to "acknowledge and log".
 * Messages are short phrases ("patching node"); facts go in fields. `cause` is always forwarded
 * so the SDK error (status, body) stays reachable in logs.
 */
export interface AdapterErrorFields {
  /** What was being done or touched, e.g. `node gpu-node-1` or `configmap gpu-reflex/gpu-reflex-state`. */
  what?: string;
  /** HTTP status (or cloud error code) the error came from, when there was one. */
  status?: number;
  cause?: unknown;
}

export abstract class AdapterError extends Error {
  /** True when repeating the same call later may succeed. */
  abstract readonly retryable: boolean;
  readonly what: string | undefined;
  readonly status: number | undefined;

  constructor(message: string, fields: AdapterErrorFields = {}) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    // Each class below also names itself as a literal: the bundles are minified, where a class's own
    // name is a letter, and the logs must say `ConflictError`, not `d` (issue #29).
    this.name = new.target.name;
    this.what = fields.what;
    this.status = fields.status;
  }
}

/** The object does not exist (404). For deletes and evictions this means "already done". */
export class NotFoundError extends AdapterError {
  override name: string = 'NotFoundError';
  readonly retryable = false;
}

/** Optimistic concurrency lost (409) or an object already exists; re-read and try again. */
export class ConflictError extends AdapterError {
  override name: string = 'ConflictError';
  readonly retryable = true;
}

/** The server asked us to slow down (429 without a disruption-budget meaning). */
export class ThrottledError extends AdapterError {
  override name: string = 'ThrottledError';
  readonly retryable = true;
}
/** Alias kept for readers who search by the HTTP reason phrase. */
export { ThrottledError as TooManyRequestsError };

/** The request itself is wrong (400, 422, a missing field); repeating it cannot help. Never retried. */
export class BadInputError extends AdapterError {
  override name: string = 'BadInputError';
  readonly retryable = false;
}

/**
 * The server refused on policy (403): RBAC denied the verb, or an admission check such as a
 * ResourceQuota rejected the object. Not retried: a person or a quota change must act first.
 */
export class ForbiddenError extends AdapterError {
  override name: string = 'ForbiddenError';
  readonly retryable = false;
}

/**
 * A safety rule outside our control blocks the action for now (a PodDisruptionBudget, a held
 * Lease). Retryable later, by a schedule, not by an immediate platform retry.
 */
export class BlockedError extends AdapterError {
  override name: string = 'BlockedError';
  readonly retryable = true;
}

/**
 * The cluster is not set up for gpu-reflex (its namespace is missing, say). Not "already done" and
 * not the event's fault: thrown so it is logged as an error, retried, then dead-lettered, loudly.
 */
export class ConfigurationError extends AdapterError {
  override name: string = 'ConfigurationError';
  readonly retryable = false;
}

/** Server-side or network trouble (5xx, reset, timeout); the same call may succeed later. */
export class TransientError extends AdapterError {
  override name: string = 'TransientError';
  readonly retryable = true;
}

/** True for errors the platform should retry (conflict, throttling, transient, blocked). */
export function isRetryable(err: unknown): boolean {
  return err instanceof AdapterError && err.retryable;
}

/** The Status message inside a Kubernetes error body (a JSON string or an object), if any. */
export function kubeStatusMessage(body: unknown): string | undefined {
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return body.length > 0 ? body.slice(0, 300) : undefined;
    }
  }
  if (parsed !== null && typeof parsed === 'object' && 'message' in parsed) {
    const m = (parsed as { message: unknown }).message;
    if (typeof m === 'string') return m;
  }
  return undefined;
}

/** Network-level failures Node reports by code (fetch wraps them in `cause`). */
const TRANSIENT_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'UND_ERR_SOCKET']);

function networkCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === 'object' && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Maps an error from `@kubernetes/client-node` to the hierarchy. The client throws
 * `ApiException` with a numeric `.code` (HTTP status) and `.body` (the Status JSON as a string);
 * it is matched structurally so this file imports no SDK. Already-mapped errors pass through.
 *
 * `what` is the short phrase naming the action, e.g. `patching node gpu-node-1`.
 */
export function fromKubeError(err: unknown, what: string): AdapterError {
  if (err instanceof AdapterError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'number') {
    const detail = kubeStatusMessage((err as { body?: unknown }).body);
    const message = detail === undefined ? what : `${what}: ${detail}`;
    const fields = { what, status: code, cause: err };
    if (code === 404) return new NotFoundError(message, fields);
    if (code === 409) return new ConflictError(message, fields);
    if (code === 429) return new ThrottledError(message, fields);
    if (code === 403) return new ForbiddenError(message, fields);
    if (code === 400 || code === 422 || code === 405 || code === 415) return new BadInputError(message, fields);
    if (code === 401) return new ForbiddenError(message, fields);
    return new TransientError(message, fields);
  }
  const net = networkCode(err);
  if (net !== undefined && TRANSIENT_CODES.has(net)) {
    return new TransientError(`${what}: ${net}`, { what, cause: err });
  }
  // A request aborted by its time limit (kube/pooled-agent.ts): node-fetch's AbortError, or the
  // signal's own TimeoutError.
  const name = err instanceof Error ? err.name : undefined;
  if (name === 'AbortError' || name === 'TimeoutError')
    return new TransientError(`${what}: no answer in time`, { what, cause: err });
  const text = err instanceof Error ? err.message : String(err);
  return new TransientError(`${what}: ${text}`, { what, cause: err });
}
