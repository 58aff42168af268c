import { errnoPhrase } from '../../../events/cli-kit/phrases.ts';

/**
 * A file system error in words (`no such file or directory`), not Node's `ENOENT: …, open '…'`:
 * the CLI kit's phrase where it knows the code, else the error's own message.
 */
export function errnoWords(err: unknown): string {
  return errnoPhrase(err) ?? (err instanceof Error ? err.message : String(err));
}
