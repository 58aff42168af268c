/**
 * The words a CLI failure is told in, shared by the commands (which name their own problems) and
 * bin/errors.ts (which phrases whatever a command throws): errno codes in plain words, a list of
 * problems folded into one line, a schema's issues in one line.
 */

/** Plain words for the errno codes a user's input or machine can cause. */
const ERRNO: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a directory',
  ENOTDIR: 'a parent in the path is not a directory',
  EEXIST: 'already exists',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  ENAMETOOLONG: 'file name too long',
  ELOOP: 'too many symbolic links',
  EMFILE: 'too many open files',
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'address not available on this machine',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'host name lookup failed (temporary)',
  EAI_FAIL: 'host name lookup failed',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
};

/** "ENOENT" → "no such file or directory", or undefined for a code we do not know. */
export function errnoPhrase(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? ERRNO[code] : undefined;
}

/**
 * Folds a message listing problems ("x is invalid:\n  a: ...\n  b: ...") into one line
 * ("x is invalid: a: ...; b: ...").
 */
export function oneLine(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  if (lines.length <= 1) return lines[0] ?? '';
  const [head, ...rest] = lines as [string, ...string[]];
  return head.endsWith(':') ? `${head} ${rest.join('; ')}` : `${head}; ${rest.join('; ')}`;
}

/** One problem a schema found: where (a field path) and what. */
export interface Issue {
  path: readonly PropertyKey[];
  message: string;
}

/** A schema's issues in one line: the first with its field path (under `prefix`), and how many more. */
export function issuesLine(issues: readonly Issue[], prefix: readonly string[] = []): string {
  const [first, ...more] = issues;
  const path = [...prefix, ...(first?.path ?? []).map(String)];
  return (
    `${path.length > 0 ? `${path.join('.')}: ` : ''}${first?.message ?? 'invalid'}` +
    `${more.length > 0 ? ` (and ${more.length} more)` : ''}`
  );
}
