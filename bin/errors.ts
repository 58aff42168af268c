/**
 * The one place where a CLI failure becomes what a user reads: one line on stderr and an exit
 * code. Known kinds of failure (bad usage, a file that cannot be read, a port in use, a file
 * that is not valid YAML/JSON, a value that fails its schema) are the user's to fix, so they are
 * told in plain words, without a stack. Anything else is our bug: one line, a hint to rerun with
 * --debug, and the stack only then.
 */
import { AdapterError } from '../functions/adapters/errors.ts';
import { InputError, UsageError } from '../events/cli-kit/command.ts';
import { parseErrorWords } from '../events/cli-kit/flags.ts';
import { errnoPhrase, issuesLine, oneLine, type Issue } from '../events/cli-kit/phrases.ts';

export interface Failure {
  /** One line, no newline in it. */
  message: string;
  /** 2 for bad usage, 1 for everything else. */
  exitCode: 1 | 2;
  /** False for our own bugs: those get the --debug hint. */
  expected: boolean;
}

interface SystemError extends Error {
  code?: unknown;
  syscall?: string;
  path?: string;
  dest?: string;
  address?: string;
  port?: number;
  hostname?: string;
  errors?: unknown[];
}

function firstLine(text: string): string {
  return (text.split('\n').find((l) => l.trim() !== '') ?? '').trim();
}

/** A Node system error (errno) in words, naming the file or address it concerns. */
function describeSystemError(err: SystemError, phrase: string): string {
  if (err.syscall === 'listen' || err.syscall === 'bind') {
    const where = err.port === undefined ? err.address : `${err.address}:${err.port}`;
    const hint = err.code === 'EACCES' ? ' (ports below 1024 need root)' : '';
    return `cannot listen on ${where}: ${phrase}${hint}`;
  }
  if (err.syscall === 'getaddrinfo' || err.syscall === 'queryA')
    return `cannot resolve host "${err.hostname}": ${phrase}`;
  if (err.syscall === 'connect')
    return `cannot connect to ${err.address}${err.port === undefined ? '' : `:${err.port}`}: ${phrase}`;
  if (err.path !== undefined) return `${err.path}${err.dest ? ` → ${err.dest}` : ''}: ${phrase}`;
  return `${err.syscall ?? 'system call'}: ${phrase}`;
}

function isZodError(err: unknown): err is Error & { issues: Issue[] } {
  return err instanceof Error && err.name === 'ZodError' && Array.isArray((err as { issues?: unknown }).issues);
}

/**
 * An adapter's message is a short phrase ("kube access: cannot load k.yaml") with the facts in
 * its cause: the cause's words are appended when they are known and not said already.
 */
function withCause(message: string, cause: unknown): string {
  if (cause === undefined) return message;
  const said = describeFailure(cause);
  return !said.expected || said.message === '' || message.includes(said.message)
    ? message
    : `${message}: ${said.message}`;
}

/** What to tell the user about `err`, and with which exit code. */
export function describeFailure(err: unknown): Failure {
  const e = err as SystemError;
  if (err instanceof UsageError) return { message: oneLine(err.message), exitCode: 2, expected: true };
  // node:util parseArgs: ERR_PARSE_ARGS_UNKNOWN_OPTION, _INVALID_OPTION_VALUE, _UNEXPECTED_POSITIONAL.
  if (typeof e?.code === 'string' && e.code.startsWith('ERR_PARSE_ARGS_')) {
    return {
      message: parseErrorWords(firstLine(e.message)),
      exitCode: 2,
      expected: true,
    };
  }
  // Our own input errors say all in their message (the cause is for --debug).
  if (err instanceof InputError) return { message: oneLine(err.message), exitCode: 1, expected: true };
  // An adapter's: a bad kubeconfig, a cluster that refused or is down.
  if (err instanceof AdapterError)
    return { message: withCause(oneLine(err.message), err.cause), exitCode: 1, expected: true };
  // A connection that tried several addresses (IPv6 and IPv4) fails with an AggregateError.
  if (err instanceof AggregateError && e.message === '' && err.errors.length > 0) return describeFailure(err.errors[0]);
  const phrase = errnoPhrase(err);
  if (phrase !== undefined) return { message: describeSystemError(e, phrase), exitCode: 1, expected: true };
  // The yaml library's YAMLParseError / YAMLWarning: the first line names line and column.
  // js-yaml's YAMLException (how @kubernetes/client-node reads a kubeconfig) names line:column too.
  if (e instanceof Error && (e.name === 'YAMLParseError' || e.name === 'YAMLWarning' || e.name === 'YAMLException')) {
    return { message: `not valid YAML: ${firstLine(e.message).replace(/:$/, '')}`, exitCode: 1, expected: true };
  }
  // JSON.parse throws SyntaxError; our own code is already compiled, so this is input.
  if (err instanceof SyntaxError)
    return { message: `not valid JSON: ${firstLine(err.message)}`, exitCode: 1, expected: true };
  if (isZodError(err)) return { message: issuesLine(err.issues), exitCode: 1, expected: true };
  const text = err instanceof Error ? `${err.name}: ${firstLine(err.message)}` : String(err);
  return { message: `unexpected error: ${text} (run with --debug for details)`, exitCode: 1, expected: false };
}

/** The stack of `err` and of every cause under it, for --debug. */
export function debugText(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    parts.push(e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : String(e));
  }
  return parts.join('\ncaused by: ');
}
