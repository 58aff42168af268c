import { ConflictError, fromKubeError } from '../errors.ts';

/** How many times a read-modify-write is tried before ConflictError reaches the caller. */
export const DEFAULT_CONFLICT_ATTEMPTS = 5;

/**
 * Runs a read-modify-write `attempt` (which reads fresh each time) and repeats it while the server
 * answers 409, up to `attempts` tries. No delay between tries: a 409 means someone else wrote in
 * between, and the next read sees their write, so waiting buys nothing here; the platform's own
 * retry (with backoff) handles a ConflictError that escapes.
 */
export async function retryOnConflict<T>(what: string, attempts: number, attempt: () => Promise<T>): Promise<T> {
  let last: ConflictError | undefined;
  for (let i = 0; i < attempts; i++) {
    try {
      return await attempt();
    } catch (err) {
      const mapped = fromKubeError(err, what);
      if (!(mapped instanceof ConflictError)) throw mapped;
      last = mapped;
    }
  }
  throw new ConflictError(`${what}: still conflicting after ${attempts} attempts`, {
    what,
    status: 409,
    cause: last,
  });
}
