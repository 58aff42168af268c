/**
 * YAML (and JSON, which is YAML 1.2) from files a person hands us: a policy, a fleet, a
 * scenario, serverless.yml. Every failure is one YamlTextError whose message is one line with
 * the line and column; callers prefix the file name.
 *
 * Aliases are bounded twice, because the yaml library is exposed in two ways: `maxAliasCount`
 * stops one anchor expanding exponentially ("billion laughs"), and a cap on the number of alias
 * nodes stops many distinct anchors, which the library resolves in quadratic time (8,000 aliases
 * in a 235 KB file took 23 s). The cap is counted by the lexer, which is linear, before parsing.
 */
import {
  Lexer,
  LineCounter,
  parseDocument,
  type Document,
  type DocumentOptions,
  type ParseOptions,
  type SchemaOptions,
} from 'yaml';

/** How many times one anchor's contents may be copied out by aliases (yaml's maxAliasCount). */
export const MAX_ALIAS_EXPANSION = 100;
/** Alias nodes (`*name`) a file may hold in all; hand-written config uses a handful. */
export const MAX_ALIASES = 200;

export class YamlTextError extends Error {
  override name = 'YamlTextError';
}

export type YamlOptions = ParseOptions & DocumentOptions & SchemaOptions;

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim();
}

/** Refuses text with more alias nodes than MAX_ALIASES; linear in the text. */
export function checkAliasCount(text: string): void {
  let aliases = 0;
  // The lexer yields each token's source; only an alias token starts with '*' (a quoted
  // scalar starts with its quote, a plain scalar cannot start with '*').
  for (const token of new Lexer().lex(text)) {
    if (token[0] === '*' && ++aliases > MAX_ALIASES) {
      throw new YamlTextError(
        `more than ${MAX_ALIASES} aliases (*name): refused as a likely resource exhaustion attack`,
      );
    }
  }
}

/** The document's value, with aliases bounded; a failure is a one-line YamlTextError. */
export function yamlValue(doc: Document): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_EXPANSION });
  } catch (err) {
    // ReferenceError from yaml: "Excessive alias count ...", "Unresolved alias ...".
    throw new YamlTextError(firstLine((err as Error).message), { cause: err });
  }
}

/** Parses one YAML document (JSON too) into plain values; errors name line and column. */
export function parseYamlText(text: string, options: YamlOptions = {}): unknown {
  checkAliasCount(text);
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { ...options, lineCounter, prettyErrors: false });
  const [first] = doc.errors;
  if (first) {
    const at = lineCounter.linePos(first.pos[0]);
    throw new YamlTextError(`line ${at.line}, column ${at.col}: ${firstLine(first.message)}`, { cause: first });
  }
  return yamlValue(doc);
}

/** What a schema can do for parseConfigText (any zod schema). */
interface Validator<T> {
  safeParse(
    raw: unknown,
  ):
    | { success: true; data: T }
    | { success: false; error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] } };
}

/** Every problem of a failed validation, one per field path: `teams.0.name: …`. */
export function issueLines(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string[] {
  return issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`);
}

/** Validates a parsed document; throws `fail(message)` naming the source and every bad field. */
export function validateConfig<T>(
  raw: unknown,
  source: string,
  schema: Validator<T>,
  fail: (message: string) => Error,
): T {
  const r = schema.safeParse(raw ?? {});
  if (!r.success) throw fail(`${source} is invalid:\n  ${issueLines(r.error.issues).join('\n  ')}`);
  return r.data;
}

/**
 * A configuration file's text (YAML or JSON) → its validated value; every failure is `fail(message)`
 * naming the source: not YAML or JSON (with the line), or each bad field by path.
 */
export function parseConfigText<T>(
  text: string,
  source: string,
  schema: Validator<T>,
  fail: (message: string) => Error,
): T {
  let raw: unknown;
  try {
    raw = parseYamlText(text);
  } catch (err) {
    throw fail(`${source}: not YAML or JSON: ${(err as Error).message}`);
  }
  return validateConfig(raw, source, schema, fail);
}
