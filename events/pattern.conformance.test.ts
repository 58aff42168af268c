/**
 * Conformance: every vector recorded against AWS (TestEventPattern, via LocalStack's snapshots)
 * and aws/event-ruler's own tests. The files live in `test/data/eventbridge-conformance/` (its README
 * names each source, commit and licence) and are read here with our JSON reader, so that number spellings
 * in the vectors reach the matcher as written; `pattern_json` / `event_json`, where present, are
 * the texts that matter (duplicate keys, `3.018e2`, `300.0000`) and are parsed instead.
 *
 * Quirks (cases tagged `quirk`): `ls-dot_joining_event` and `ls-dot_joining_pattern` show that AWS
 * joins keys with `.`, so `{"state": {"status": ...}}` also matches a literal `"state.status"` key
 * and the reverse. We follow AWS on purpose: a rule tested locally must behave the same deployed.
 *
 * Skipped cases: none. SKIPPED must name any case we ever stop following, with the reason.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseJsonText } from './json-text.ts';
import { compilePattern, InvalidPatternError, matchesPattern, validatePattern } from './pattern.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(repoRoot, 'test', 'data', 'eventbridge-conformance');

interface MatchCase {
  id: string;
  envelope: 'none' | 'partial' | 'full';
  features: string[];
  pattern: unknown;
  event: unknown;
  pattern_json?: string;
  event_json?: string;
  matches: boolean;
}

interface InvalidCase {
  id: string;
  pattern: unknown;
  error_message: string;
}

const read = <T>(file: string): T[] => parseJsonText(readFileSync(path.join(dir, file), 'utf8')) as T[];
const matchCases = read<MatchCase>('eventbridge-patterns.json');
const invalidCases = read<InvalidCase>('eventbridge-invalid-patterns.json');

const SKIPPED: Record<string, string> = {};

const patternOf = (c: MatchCase) => (c.pattern_json === undefined ? c.pattern : parseJsonText(c.pattern_json));
const eventOf = (c: MatchCase) => (c.event_json === undefined ? c.event : parseJsonText(c.event_json));

describe('EventBridge pattern conformance vectors', () => {
  it('holds every recorded case (304 matches, 38 refusals)', () => {
    expect(matchCases).toHaveLength(304);
    expect(invalidCases).toHaveLength(38);
    for (const id of Object.keys(SKIPPED)) expect(matchCases.some((c) => c.id === id)).toBe(true);
  });

  it.each(matchCases.filter((c) => !(c.id in SKIPPED)).map((c) => [c.id, c] as const))('%s', (_id, c) => {
    expect(matchesPattern(patternOf(c), eventOf(c))).toBe(c.matches);
  });

  // event-ruler style cases carry bare events; wrapped under `detail` as on a bus, the answer holds.
  it.each(matchCases.filter((c) => c.envelope === 'none' && !(c.id in SKIPPED)).map((c) => [c.id, c] as const))(
    '%s gives the same answer wrapped under detail',
    (_id, c) => {
      const wrapped = compilePattern({ detail: patternOf(c) });
      expect(wrapped({ source: 'gpu-reflex.test', 'detail-type': 'Conformance', detail: eventOf(c) })).toBe(c.matches);
    },
  );

  it.each(invalidCases.map((c) => [c.id, c] as const))('refuses %s with AWS reason', (_id, c) => {
    expect(() => validatePattern(c.pattern)).toThrow(InvalidPatternError);
    expect(() => compilePattern(c.pattern)).toThrow(c.error_message);
    let message = '';
    try {
      validatePattern(c.pattern);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe(c.error_message);
  });
});
