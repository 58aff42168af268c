/**
 * A 401 from the API server means the credentials the wiring holds are no longer good: a token
 * that expired or was rotated, a kubeconfig replaced in Parameter Store. The wiring fetches its
 * kubeconfig once per container (functions/lib/wiring.ts), so without this a container would keep
 * failing with the stale one for its whole life. This decorator, around every Kubernetes port,
 * reports such a refusal (`onUnauthorized`: the wiring marks itself stale, and the next invocation
 * wires again, fetching the kubeconfig anew) and turns it into a retryable TransientError, so the
 * platform's retry of the invocation runs with the new credentials. A 401 with credentials just
 * fetched fails the same way, bounded by the function's retries, then its dead-letter queue.
 */
import { AdapterError, TransientError } from '../errors.ts';

function unauthorized(err: unknown): boolean {
  if (err instanceof AdapterError) return err.status === 401;
  return (err as { code?: unknown } | null)?.code === 401;
}

function refused(err: unknown, onUnauthorized: () => void): never {
  if (!unauthorized(err)) throw err;
  onUnauthorized();
  const what = err instanceof AdapterError ? err.what : undefined;
  const message = err instanceof Error ? err.message : String(err);
  throw new TransientError(`${message} (401: credentials refused; they are fetched again for the retry)`, {
    ...(what !== undefined ? { what } : {}),
    status: 401,
    cause: err,
  });
}

/** The same ports, each method's 401 reported and made retryable; everything else untouched. */
export function reauthOn401<T extends object>(ports: T, onUnauthorized: () => void): T {
  const wrapPort = (port: object): object =>
    new Proxy(port, {
      get(target, key, receiver) {
        const v: unknown = Reflect.get(target, key, receiver);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          let out: unknown;
          try {
            out = (v as (...a: unknown[]) => unknown).apply(target, args);
          } catch (err) {
            refused(err, onUnauthorized);
          }
          return out instanceof Promise ? out.catch((err: unknown) => refused(err, onUnauthorized)) : out;
        };
      },
    });
  return Object.fromEntries(
    Object.entries(ports).map(([k, p]) => [k, typeof p === 'object' && p !== null ? wrapPort(p as object) : p]),
  ) as T;
}
