/** `gpu-reflex events list | validate | schemas`. */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import { UsageError, type CliIo, type Command } from './cli-kit/command.ts';
import { parseFlags, parseFlagsAndArgs } from './cli-kit/flags.ts';
import { errnoPhrase } from './cli-kit/phrases.ts';
import { ensureOutputFolder } from './cli-kit/input.ts';
import { CATALOG } from './catalog.ts';
import { validateEvent, type Problem } from './validate.ts';

export const listCommand: Command = {
  path: ['events', 'list'],
  summary: 'list every event detail-type with its source',
  help: [
    'Usage: gpu-reflex events list [--json]',
    '',
    'Prints one detail-type per line with the source that sends it.',
    '  --json   one JSON object per line: {"detailType","source","summary"}',
  ].join('\n'),
  async run(args, io) {
    const values = parseFlags(args, { json: { type: 'boolean' } });
    const width = Math.max(...CATALOG.map((e) => e.detailType.length));
    for (const e of CATALOG) {
      io.out(
        values.json
          ? JSON.stringify({ detailType: e.detailType, source: e.source, summary: e.summary })
          : `${e.detailType.padEnd(width)}  ${e.source}`,
      );
    }
    return 0;
  },
};

async function readInput(path: string, io: CliIo): Promise<string> {
  if (io.readInput) return io.readInput(path);
  if (path === '-') {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  return readFile(path, 'utf8');
}

/** A file holds one event (as EventBridge delivers it) or an array of them. */
function problemsInFile(text: string): Problem[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return [{ path: '(file)', message: `not JSON: ${(err as Error).message}` }];
  }
  const events = Array.isArray(parsed) ? parsed : [parsed];
  if (events.length === 0) return [{ path: '(file)', message: 'empty array: no event to validate' }];
  return events.flatMap((ev, i) => {
    const r = validateEvent(ev);
    if (r.ok) return [];
    return r.problems.map((p) => ({ path: Array.isArray(parsed) ? `[${i}].${p.path}` : p.path, message: p.message }));
  });
}

export const validateCommand: Command = {
  path: ['events', 'validate'],
  summary: 'validate event files against the catalog',
  help: [
    'Usage: gpu-reflex events validate FILE... ',
    '',
    'Checks each file (one event as EventBridge delivers it, or a JSON array of them; "-" reads',
    'standard input) against the envelope and the catalog schema of its detail-type.',
    'Exit 0 when every event is valid; exit 1 and print every problem with its field path:',
    '  events/bad.json: detail.xid: expected integer, got "79"',
    '',
    'Examples live beside their schemas: gpu-reflex events validate events/catalog/*.example.json',
  ].join('\n'),
  async run(args, io) {
    const { positionals } = parseFlagsAndArgs(args, {});
    if (positionals.length === 0) throw new UsageError('name at least one FILE');
    let bad = 0;
    for (const file of positionals) {
      let text: string;
      try {
        text = await readInput(file, io);
      } catch (err) {
        io.err(`${file}: cannot read: ${errnoPhrase(err) ?? (err as Error).message}`);
        bad++;
        continue;
      }
      const problems = problemsInFile(text);
      for (const p of problems) io.err(`${file}: ${p.path}: ${p.message}`);
      if (problems.length) bad++;
    }
    io.out(`${positionals.length - bad} of ${positionals.length} file${positionals.length === 1 ? '' : 's'} valid`);
    return bad === 0 ? 0 : 1;
  },
};

/** JSON Schema (draft 2020-12) of one detail-type, for a schema registry. */
export function jsonSchemaOf(detailType: string): Record<string, unknown> {
  const entry = CATALOG.find((e) => e.detailType === detailType);
  if (!entry) throw new Error(`unknown detail-type ${detailType}`);
  return {
    ...z.toJSONSchema(entry.schema, { unrepresentable: 'any' }),
    title: entry.detailType,
    description: `Detail of "${entry.detailType}" events from ${entry.source}: ${entry.summary}.`,
  };
}

export const schemasCommand: Command = {
  path: ['events', 'schemas'],
  summary: 'write the JSON Schema of every detail-type',
  help: [
    'Usage: gpu-reflex events schemas --out DIR',
    '',
    'Writes DIR/<detail-type-slug>.schema.json (JSON Schema draft 2020-12) for every detail-type,',
    'ready to load into a schema registry (e.g. EventBridge Schemas, "JSONSchemaDraft4"-compatible',
    'tools may need conversion).',
  ].join('\n'),
  async run(args, io) {
    const values = parseFlags(args, { out: { type: 'string' } });
    if (!values.out) throw new UsageError('--out DIR is required');
    await ensureOutputFolder(values.out, '--out');
    for (const e of CATALOG) {
      const file = join(values.out, `${e.slug}.schema.json`);
      await writeFile(file, JSON.stringify(jsonSchemaOf(e.detailType), null, 2) + '\n');
      io.out(file);
    }
    return 0;
  },
};
