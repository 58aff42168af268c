import { describe, expect, it } from 'vitest';
import { parseJsonText } from './json-text.ts';
import { compilePattern, InvalidPatternError, matchesPattern, prepareEvent, validatePattern } from './pattern.ts';

const xidEvent = (xid: unknown, extra: Record<string, unknown> = {}) => ({
  version: '0',
  id: '6a7e8feb-b491-4cf7-a9f1-bf3703467718',
  'detail-type': 'GPU XID Error',
  source: 'gpu-reflex.node-agent',
  account: '123456789012',
  time: '2026-11-21T20:00:00Z',
  region: 'eu-central-1',
  resources: ['arn:gpu-reflex:node/gpu-node-7'],
  detail: { node: 'gpu-node-7', gpu: { index: 3, uuid: 'GPU-9c1e', migEnabled: false }, xid, ...extra },
});

const XID_RULE = {
  source: ['gpu-reflex.node-agent'],
  'detail-type': ['GPU XID Error'],
  detail: { xid: [{ numeric: ['>=', 0] }] },
};

describe("gpu-reflex's own rules", () => {
  it.each([
    ['any XID error', XID_RULE, xidEvent(79), true],
    ['any XID error, XID 0 included', XID_RULE, xidEvent(0), true],
    ['not an XID given as a string', XID_RULE, xidEvent('79'), false],
    ['not another detail-type', XID_RULE, { ...xidEvent(79), 'detail-type': 'GPU Health Changed' }, false],
    ['not another source', XID_RULE, { ...xidEvent(79), source: 'aws.ec2' }, false],
    ['fatal XIDs only', { detail: { xid: [79, 48, 94, 95] } }, xidEvent(48), true],
    ['fatal XIDs only, 13 is not', { detail: { xid: [79, 48, 94, 95] } }, xidEvent(13), false],
    ['XID noise excluded', { detail: { xid: [{ 'anything-but': [13, 31, 43, 45] }] } }, xidEvent(45), false],
    ['XID noise excluded, 79 passes', { detail: { xid: [{ 'anything-but': [13, 31, 43, 45] }] } }, xidEvent(79), true],
    ['nodes of the a100 pool by prefix', { detail: { node: [{ prefix: 'gpu-node-' }] } }, xidEvent(79), true],
    ['nested GPU fields', { detail: { gpu: { index: [3], migEnabled: [false] } } }, xidEvent(79), true],
    ['MIG GPUs only', { detail: { gpu: { migEnabled: [true] } } }, xidEvent(79), false],
    ['no drain flag yet', { detail: { drained: [{ exists: false }] } }, xidEvent(79), true],
    ['drain flag set', { detail: { drained: [{ exists: true }] } }, xidEvent(79, { drained: true }), true],
    [
      'fatal XID or any ECC error',
      { detail: { $or: [{ xid: [79] }, { ecc: { uncorrected: [{ numeric: ['>', 0] }] } }] } },
      xidEvent(13, { ecc: { uncorrected: 2 } }),
      true,
    ],
    ['resources wildcard', { resources: [{ wildcard: 'arn:gpu-reflex:node/*-7' }] }, xidEvent(79), true],
  ] as const)('%s', (_name, pattern, event, expected) => {
    expect(matchesPattern(pattern, event)).toBe(expected);
  });
});

describe('pattern semantics', () => {
  it.each([
    ['an exact number matches other spellings by value', '{"a":[300]}', '{"a":3.0e2}', true],
    ['numbers beyond ±5e9 match by spelling only', '{"a":[123456789012]}', '{"a":123456789012.0}', false],
    ['numbers beyond ±5e9 still match the same spelling', '{"a":[123456789012]}', '{"a":123456789012}', true],
    [
      'a numeric range skips numbers with more than 6 decimals',
      '{"a":[{"numeric":[">",0]}]}',
      '{"a":0.0000001}',
      false,
    ],
    ['a numeric range compares exact decimals', '{"a":[{"numeric":["<",0.3]}]}', '{"a":0.299999}', true],
    ['types never cross', '{"a":["true"]}', '{"a":true}', false],
    ['null matches null only', '{"a":[null]}', '{"a":"null"}', false],
    ['anything-but matches null', '{"a":[{"anything-but":"x"}]}', '{"a":null}', true],
    ['anything-but never matches a missing field', '{"a":[{"anything-but":"x"}]}', '{"b":1}', false],
    ['an empty event array is absent', '{"a":[{"exists":false}]}', '{"a":[]}', true],
    ['exists only sees leaves', '{"a":[{"exists":true}]}', '{"a":{"b":1}}', false],
    [
      'array consistency holds across nested fields',
      '{"r":{"k":["x"],"v":["2"]}}',
      '{"r":[{"k":"x","v":"1"},{"k":"y","v":"2"}]}',
      false,
    ],
    [
      'array consistency finds the right element',
      '{"r":{"k":["y"],"v":["2"]}}',
      '{"r":[{"k":"x","v":"1"},{"k":"y","v":"2"}]}',
      true,
    ],
    [
      'exists:false is judged in the chosen element',
      '{"r":{"k":["y"],"v":[{"exists":false}]}}',
      '{"r":[{"k":"x","v":"1"},{"k":"y"}]}',
      true,
    ],
    [
      'exists:false sees every element when nothing else chooses one',
      '{"r":{"v":[{"exists":false}]}}',
      '{"r":[{"v":"1"},{"k":"y"}]}',
      false,
    ],
    ['IPv6 exact strings match other spellings', '{"ip":["2001:db8::1"]}', '{"ip":"2001:0DB8:0:0:0:0:0:1"}', true],
    ['IPv6 CIDR', '{"ip":[{"cidr":"2001:db8::/32"}]}', '{"ip":"2001:db8:ffff::1"}', true],
    ['IPv4 CIDR never matches IPv6', '{"ip":[{"cidr":"0.0.0.0/0"}]}', '{"ip":"::1"}', false],
    ['IPv4-in-IPv6 tail parses', '{"ip":[{"cidr":"::ffff:0:0/96"}]}', '{"ip":"::ffff:10.0.0.1"}', true],
    ['wildcard escapes a star', '{"a":[{"wildcard":"a\\\\*b"}]}', '{"a":"a*b"}', true],
    ['wildcard escaped star is literal', '{"a":[{"wildcard":"a\\\\*b"}]}', '{"a":"axb"}', false],
    ['a "__proto__" key is an ordinary field', '{"__proto__":{"x":["1"]}}', '{"__proto__":{"x":"1"}}', true],
    ['inherited properties are not fields', '{"constructor":[{"exists":true}]}', '{"a":1}', false],
  ] as const)('%s', (_name, pattern, event, expected) => {
    expect(matchesPattern(parseJsonText(pattern), parseJsonText(event))).toBe(expected);
  });

  it.each([
    ['an empty pattern', {}, 'Empty objects are not allowed'],
    ['a non-object pattern', ['a'], 'Filter is not an object'],
    [
      'a numeric bound beyond 5e9',
      { a: [{ numeric: ['>', 6e9] }] },
      'Value must be between -5.0E9 and 5.0E9, inclusive',
    ],
    [
      'a numeric bound with 7 decimals',
      { a: [{ numeric: ['>', 0.0000001] }] },
      'Only values upto 6 decimals are supported',
    ],
    ['an inverted range', { a: [{ numeric: ['>', 5, '<', 1] }] }, 'Bottom must be less than top'],
    ['mixed anything-but list', { a: [{ 'anything-but': ['a', 1] }] }, 'mixed type is not supported'],
    ['a $or with one branch', { $or: [{ a: ['1'] }] }, 'There must have at least 2 Objects in $or relationship.'],
    ['a $or that is not a list', { $or: { a: ['1'] } }, 'It must be an Array followed with $or.'],
    ['two operators in one object', { a: [{ prefix: 'a', suffix: 'b' }] }, 'Only one key allowed in match expression'],
    ['a bad wildcard escape', { a: [{ wildcard: 'a\\b' }] }, 'Invalid escape character'],
    [
      'too many stars in one field',
      { a: [{ wildcard: '*a*' }, { wildcard: '*b*' }, { 'anything-but': { wildcard: '*c*' } }] },
      'Rule is too complex',
    ],
    ['a CIDR mask beyond the family', { a: [{ cidr: '10.0.0.0/33' }] }, 'mask bits must be between 0 and 32'],
    ['NaN as a value', { a: [Number.NaN] }, 'Match value must be String, number, true, false, or null'],
    ['nested value lists', { a: [['x']] }, 'Match value must be String, number, true, false, or null'],
  ])('refuses %s', (_name, pattern, reason) => {
    expect(() => validatePattern(pattern)).toThrow(InvalidPatternError);
    expect(() => validatePattern(pattern)).toThrow(reason);
  });

  it('lets one prepared event be matched by many compiled rules', () => {
    const rules = [XID_RULE, { detail: { xid: [13] } }, { detail: { node: [{ suffix: '-7' }] } }].map(compilePattern);
    const event = prepareEvent(xidEvent(79));
    expect(rules.map((match) => match(event))).toEqual([true, false, true]);
    expect(prepareEvent(event)).toBe(event);
  });

  it('tolerates events JSON cannot express without crashing', () => {
    const cyclic: Record<string, unknown> = { a: 'x' };
    cyclic.self = cyclic;
    expect(matchesPattern({ a: ['x'], self: { a: ['x'] } }, cyclic)).toBe(false);
    expect(matchesPattern({ a: [{ exists: false }] }, { a: undefined })).toBe(true);
    expect(matchesPattern({ a: ['x'] }, 'not an object')).toBe(false);
    expect(matchesPattern({ text: [{ exists: true }] }, parseJsonText('12'))).toBe(false);
  });

  it('answers without exploring every combination of unrelated arrays', () => {
    const list = Array.from({ length: 1000 }, (_, i) => i);
    const rule = compilePattern({
      a: [{ exists: true }],
      b: [{ exists: true }],
      c: [{ exists: true }],
      d: [{ exists: false }],
    });
    // 10^9 combinations of a, b and c; each loses to the d leaf, which no choice can exclude.
    expect(rule({ a: list, b: list, c: list, d: 1 })).toBe(false);
    expect(rule({ a: list, b: list, c: list, d: [1] })).toBe(false);
    expect(rule({ a: list, b: list, c: list })).toBe(true);
  });

  it('refuses patterns nested deeper than 64 levels', () => {
    let deep: Record<string, unknown> = { leaf: ['x'] };
    for (let i = 0; i < 70; i++) deep = { n: deep };
    expect(() => validatePattern(deep)).toThrow('nested more than 64 levels');
  });

  it('finds a leaf 1,000 arrays down, and indexes 60,000 nested arrays in linear time', () => {
    const nest = (levels: number, leaf: unknown) => {
      let v = leaf;
      for (let i = 0; i < levels; i++) v = [v, 0];
      return v;
    };
    expect(matchesPattern({ detail: { a: [79] } }, { detail: { a: nest(998, 79) } })).toBe(true);
    const started = performance.now();
    // A leaf on every level: copying each leaf's array path made this depth² (minutes).
    expect(matchesPattern({ detail: { a: [79] } }, { detail: { a: nest(60_000, 1) } })).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('walks deep events without overflowing the stack', () => {
    let event: Record<string, unknown> = { leaf: 'x' };
    for (let i = 0; i < 20_000; i++) event = { n: event };
    expect(matchesPattern({ a: [{ exists: false }] }, event)).toBe(true);
  });
});

describe('parseJsonText', () => {
  it('keeps the last of duplicate keys and the spelling of numbers', () => {
    const value = parseJsonText('{"x": 1, "x": 3.0e2}') as { x: { text: string; value: number } };
    expect(value.x.text).toBe('3.0e2');
    expect(value.x.value).toBe(300);
  });

  it('reads escapes like JSON.parse', () => {
    const text = '["a\\"b\\\\c\\/\\n\\u00e9\\ud83d\\ude80", true, false, null, {}, []]';
    expect(parseJsonText(text)).toEqual(JSON.parse(text));
  });

  it('reads 1,000 levels and refuses deeper text with a SyntaxError, not a stack overflow', () => {
    const nest = (d: number) => '['.repeat(d) + ']'.repeat(d);
    expect(() => parseJsonText(nest(1000))).not.toThrow();
    expect(() => parseJsonText(nest(1001))).toThrow(new SyntaxError('JSON nested too deeply at position 1000'));
    expect(() => parseJsonText(nest(60_000))).toThrow(SyntaxError);
  });

  it.each(['', '{', '{"a":1,}', '[1 2]', '01', '"\\x"', '{"a":1} x', 'tru', '"a\u0001"'])('refuses %j', (text) => {
    expect(() => parseJsonText(text)).toThrow(SyntaxError);
  });
});
