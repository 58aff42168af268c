import { readFileSync } from 'node:fs';
import { errnoWords } from './errno-words.ts';
import { dirname, extname, resolve as resolvePath } from 'node:path';
import type { ScalarTag, CollectionTag } from 'yaml';
import { parseYamlText } from '../../../functions/lib/yaml-text.ts';

/**
 * Reads serverless.yml the way osls does, for the parts the local bus needs. CloudFormation short
 * tags (`!Ref`, `!GetAtt`, …) parse to their long form. Variables resolve lazily, only in the
 * values the bus reads, so an `${ssm:...}` in some function's `environment` does not stop the
 * local stack; a variable the bus must read but cannot resolve is an error naming where it is.
 *
 * Supported sources: `file(./x.json)` / `file(./x.yml):a.b` (relative to serverless.yml),
 * `self:a.b`, `sls:stage`, `opt:stage|region`, `env:NAME`, `aws:region|accountId`, fallbacks
 * `${env:X, 'default'}`, and variables nested inside a variable.
 */
export class ServerlessConfigError extends Error {
  override name = 'ServerlessConfigError';
}

export interface VariableContext {
  /** The effective stage, for `${sls:stage}`. */
  stage: string;
  /** The stage given as an option (`--stage`), for `${opt:stage}`; undefined lets its fallback apply. */
  optStage?: string;
  region: string;
  account: string;
  env: Record<string, string | undefined>;
}

const CF_FUNCTIONS = [
  'Ref',
  'GetAtt',
  'Sub',
  'Join',
  'Select',
  'Split',
  'ImportValue',
  'If',
  'Equals',
  'Not',
  'And',
  'Or',
  'FindInMap',
  'Base64',
  'Cidr',
  'GetAZs',
  'Condition',
];
const CF_TAGS: (ScalarTag | CollectionTag)[] = CF_FUNCTIONS.flatMap((n) => {
  const key = n === 'Ref' || n === 'Condition' ? n : `Fn::${n}`;
  const wrap = (v: unknown) => ({ [key]: n === 'GetAtt' && typeof v === 'string' ? v.split('.') : v });
  return [
    { tag: `!${n}`, resolve: (s: string) => wrap(s) },
    { tag: `!${n}`, collection: 'seq' as const, resolve: (seq: { toJSON(): unknown }) => wrap(seq.toJSON()) },
    { tag: `!${n}`, collection: 'map' as const, resolve: (map: { toJSON(): unknown }) => wrap(map.toJSON()) },
  ] as (ScalarTag | CollectionTag)[];
});

export function parseYaml(text: string, where: string): unknown {
  try {
    return parseYamlText(text, { customTags: CF_TAGS });
  } catch (err) {
    throw new ServerlessConfigError(`${where}: not valid YAML: ${(err as Error).message}`);
  }
}

/** A parsed serverless.yml whose values are resolved on demand with `get`. */
export class ServerlessDocument {
  readonly dir: string;
  readonly raw: Record<string, unknown>;

  constructor(
    readonly path: string,
    private readonly ctx: VariableContext,
  ) {
    this.dir = dirname(resolvePath(path));
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new ServerlessConfigError(`cannot read ${path}: ${errnoWords(err)}`);
    }
    const doc = parseYaml(text, path);
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
      throw new ServerlessConfigError(`${path}: expected a mapping at the top`);
    this.raw = doc as Record<string, unknown>;
  }

  /** The value at a dotted path with every variable inside it resolved. */
  get(path: string): unknown {
    return this.resolveDeep(lookup(this.raw, path), path, 0);
  }

  /** The raw value at a path, variables left as written (to list keys without resolving them). */
  rawAt(path: string): unknown {
    return lookup(this.raw, path);
  }

  private resolveDeep(value: unknown, where: string, depth: number): unknown {
    if (depth > 20) throw new ServerlessConfigError(`${where}: variables nest too deeply (a cycle?)`);
    if (typeof value === 'string') return this.resolveString(value, where, depth);
    if (Array.isArray(value)) return value.map((v, i) => this.resolveDeep(v, `${where}[${i}]`, depth));
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, this.resolveDeep(v, `${where}.${k}`, depth)]),
      );
    }
    return value;
  }

  /** Innermost `${...}` first, so a variable may build another's address. */
  private resolveString(text: string, where: string, depth: number): unknown {
    let current: unknown = text;
    for (let guard = 0; typeof current === 'string' && current.includes('${'); guard++) {
      if (guard > 50) throw new ServerlessConfigError(`${where}: too many variables in "${text}"`);
      const s: string = current;
      const m = /\$\{([^${}]+)\}/.exec(s);
      if (!m) break;
      const value = this.resolveVariable(m[1] as string, where, depth);
      // A variable that is the whole string keeps its type (an object from file(), a number…).
      current = m[0] === s ? value : s.replace(m[0], typeof value === 'string' ? value : JSON.stringify(value));
    }
    return current;
  }

  private resolveVariable(body: string, where: string, depth: number): unknown {
    const [ref = '', ...fallbacks] = splitTopLevel(body);
    for (const candidate of [ref, ...fallbacks]) {
      const v = this.resolveOne(candidate.trim(), where, depth);
      if (v !== undefined && v !== null) return v;
    }
    throw new ServerlessConfigError(`${where}: variable \${${body}} resolves to nothing`);
  }

  private resolveOne(ref: string, where: string, depth: number): unknown {
    const quoted = /^(['"])(.*)\1$/s.exec(ref);
    if (quoted) return quoted[2];
    if (/^-?\d+(\.\d+)?$/.test(ref)) return Number(ref);
    const file = /^file\((.+?)\)(?::(.+))?$/.exec(ref);
    if (file) return this.fromFile((file[1] as string).trim().replace(/^(['"])(.*)\1$/, '$2'), file[2], where, depth);
    const colon = ref.indexOf(':');
    const source = colon < 0 ? ref : ref.slice(0, colon);
    const address = colon < 0 ? '' : ref.slice(colon + 1);
    switch (source) {
      case 'self':
        return this.resolveDeep(
          address === '' ? this.raw : lookup(this.raw, address),
          `${where} (via self:${address})`,
          depth + 1,
        );
      case 'sls':
        if (address === 'stage') return this.ctx.stage;
        break;
      case 'opt':
        if (address === 'stage') return this.ctx.optStage;
        if (address === 'region') return this.ctx.region;
        return undefined;
      case 'env':
        return this.ctx.env[address];
      case 'aws':
        if (address === 'region') return this.ctx.region;
        if (address === 'accountId') return this.ctx.account;
        break;
    }
    throw new ServerlessConfigError(
      `${where}: variable \${${ref}} is not supported by the local bus (file, self, sls:stage, opt, env, aws are)`,
    );
  }

  private fromFile(rel: string, key: string | undefined, where: string, depth: number): unknown {
    const full = resolvePath(this.dir, rel);
    let text: string;
    try {
      text = readFileSync(full, 'utf8');
    } catch (err) {
      throw new ServerlessConfigError(`${where}: \${file(${rel})}: ${errnoWords(err)} (${full})`);
    }
    let content: unknown;
    if (extname(full) === '.json') {
      try {
        content = JSON.parse(text);
      } catch (err) {
        throw new ServerlessConfigError(`${where}: \${file(${rel})} is not valid JSON: ${(err as Error).message}`);
      }
    } else content = parseYaml(text, full);
    const picked = key === undefined ? content : lookup(content, key.trim());
    if (picked === undefined) throw new ServerlessConfigError(`${where}: \${file(${rel}):${key}} has no such key`);
    return this.resolveDeep(picked, `${where} (in ${rel})`, depth + 1);
  }
}

/** Dotted lookup; numeric segments index arrays. */
export function lookup(root: unknown, path: string): unknown {
  let cur = root;
  for (const seg of path.split('.').filter((s) => s !== '')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[seg];
  }
  return cur;
}

/** `a, 'b, c', d` → [a, 'b, c', d]: commas inside quotes or parentheses do not split. */
function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out;
}
