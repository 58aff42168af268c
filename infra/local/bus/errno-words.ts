import { errnoPhrase } from '../../../bin/errors.ts';

/** A file system error in words (`no such file or directory`), not Node's `ENOENT: …, open '…'`. */
export function errnoWords(err: unknown): string {
  return errnoPhrase(err) ?? (err instanceof Error ? err.message : String(err));
}
