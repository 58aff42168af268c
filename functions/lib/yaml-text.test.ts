import { describe, expect, it } from 'vitest';
import { MAX_ALIASES, parseYamlText, YamlTextError } from './yaml-text.ts';

/** Nine levels of nine aliases: 9^9 strings if expanded. */
const billionLaughs = [
  'a: &a ["x","x","x","x","x","x","x","x","x"]',
  ...'bcdefghi'.split('').map((k, i) => {
    const prev = 'abcdefghi'[i]!;
    return `${k}: &${k} [${Array.from({ length: 9 }, () => `*${prev}`).join(',')}]`;
  }),
].join('\n');

/** Many distinct anchors, one alias each: no single anchor is over-used, but yaml resolves them in quadratic time. */
const manyAliases = (n: number) =>
  [
    ...Array.from({ length: n }, (_, i) => `a${i}: &x${i} v`),
    ...Array.from({ length: n }, (_, i) => `b${i}: *x${i}`),
  ].join('\n');

function thrown(text: string): Error | undefined {
  try {
    parseYamlText(text);
  } catch (e) {
    return e as Error;
  }
  return undefined;
}

describe('parseYamlText', () => {
  it('parses YAML and JSON, anchors and aliases included', () => {
    expect(parseYamlText('base: &b { cpu: 1 }\nnode: *b\n')).toEqual({ base: { cpu: 1 }, node: { cpu: 1 } });
    expect(parseYamlText('{"a": [1, "*not-an-alias"], "b": "x*y"}')).toEqual({ a: [1, '*not-an-alias'], b: 'x*y' });
    expect(parseYamlText('')).toBeNull();
  });

  it('refuses an exponential alias bomb with one line', () => {
    const err = thrown(billionLaughs);
    expect(err).toBeInstanceOf(YamlTextError);
    expect(err?.message).toBe('Excessive alias count indicates a resource exhaustion attack');
  });

  it('counts aliases before parsing, so many distinct aliases cannot make parsing quadratic', () => {
    expect(parseYamlText(manyAliases(MAX_ALIASES))).toMatchObject({ b0: 'v' });
    expect(thrown(manyAliases(MAX_ALIASES + 1))?.message).toMatch(`more than ${MAX_ALIASES} aliases`);
  });

  it('names line and column of a syntax error, in one line', () => {
    const err = thrown('ok: 1\na: [\n');
    expect(err).toBeInstanceOf(YamlTextError);
    expect(err?.message).toMatch(/^line 3, column 1: /);
    expect(err?.message).not.toContain('\n');
  });
});
