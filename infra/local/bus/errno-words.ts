/**
 * A file system error in words (`no such file or directory`), not Node's `ENOENT: …, open '…'`.
 * The simulators keep their own few words (the CLI kit's bin/errors.ts is above them).
 */
const WORDS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a directory',
  ENOTDIR: 'a parent in the path is not a directory',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'file name too long',
};

export function errnoWords(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  return (typeof code === 'string' ? WORDS[code] : undefined) ?? (err instanceof Error ? err.message : String(err));
}
