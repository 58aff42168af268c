/**
 * Files a command is handed: read with a message that names the option and the problem
 * ("cannot read --policy p.yaml: no such file or directory"), and output paths checked before
 * any work starts, so a run never fails at its end for a path it could have refused at once.
 */
import { constants } from 'node:fs';
import { access, mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { InputError, type CliIo } from './command.ts';
import { errnoPhrase } from './phrases.ts';

function reason(err: unknown): string {
  return errnoPhrase(err) ?? (err as Error).message;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The whole of `path` (standard input for `-`); `what` names it in errors: `--policy`, `event file`. */
export async function readInputText(path: string, what: string, io: CliIo): Promise<string> {
  try {
    if (io.readInput) return await io.readInput(path);
    return path === '-' ? await readStdin() : await readFile(path, 'utf8');
  } catch (err) {
    throw new InputError(`cannot read ${what} ${path}: ${reason(err)}`, { cause: err });
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** A JSON object from `path`; an empty file, bad JSON or another JSON value is an InputError. */
export async function readJsonObject(path: string, what: string, io: CliIo): Promise<Record<string, unknown>> {
  const text = await readInputText(path, what, io);
  if (text.trim() === '') throw new InputError(`${what} ${path} is empty: expected a JSON object`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new InputError(`${what} ${path} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InputError(`${what} ${path}: expected a JSON object, got ${kindOf(value)}`);
  }
  return value as Record<string, unknown>;
}

/** Refuses, before any work, an output file that cannot be written: a directory, a missing or read-only folder. */
export async function checkWritableFile(path: string, what: string): Promise<void> {
  const existing = await stat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw new InputError(`cannot write ${what} ${path}: ${reason(err)}`, { cause: err });
  });
  if (existing?.isDirectory()) throw new InputError(`cannot write ${what} ${path}: is a directory, expected a file`);
  const folder = dirname(path);
  if (!existing) {
    const parent = await stat(folder).catch(() => undefined);
    if (!parent) throw new InputError(`cannot write ${what} ${path}: folder ${folder} does not exist`);
    if (!parent.isDirectory()) throw new InputError(`cannot write ${what} ${path}: ${folder} is not a folder`);
  }
  try {
    await access(existing ? path : folder, constants.W_OK);
  } catch (err) {
    throw new InputError(`cannot write ${what} ${path}: ${reason(err)}`, { cause: err });
  }
}

/** Creates output folder `path` (and its parents) or says why it cannot be one. */
export async function ensureOutputFolder(path: string, what: string): Promise<void> {
  const existing = await stat(path).catch(() => undefined);
  if (existing && !existing.isDirectory()) throw new InputError(`${what} ${path} exists and is not a folder`);
  try {
    // One folder at a time, not mkdir's `recursive`: Node's recursive mkdir never returns where the
    // kernel answers ENOENT for a folder under an existing one (/proc/x), and the command hung.
    const missing: string[] = [];
    for (let p = resolve(path); !(await stat(p).catch(() => undefined)); p = dirname(p)) {
      missing.unshift(p);
      if (dirname(p) === p) break;
    }
    for (const folder of missing) await mkdir(folder);
    await access(path, constants.W_OK);
  } catch (err) {
    throw new InputError(`cannot create ${what} ${path}: ${reason(err)}`, { cause: err });
  }
}
