import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJsonText } from './json-text.ts';
import { compilePattern, InvalidPatternError, matchesPattern, prepareEvent, validatePattern } from './pattern.ts';

/** Runs `f`; passes when it returns a boolean (or nothing) or throws InvalidPatternError. */
function onlyBooleanOrInvalid(f: () => unknown): boolean {
  try {
    const r = f();
    return r === undefined || typeof r === 'boolean';
  } catch (err) {
    if (err instanceof InvalidPatternError) return true;
    throw err;
  }
}

const key = fc.stringMatching(/^[a-z][a-z.-]{0,4}$/);
const scalar = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.integer({ min: -20, max: 20 }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
);
const looseArg = fc.oneof(
  scalar,
  fc.array(scalar, { maxLength: 3 }),
  fc.dictionary(fc.constantFrom('prefix', 'suffix', 'equals-ignore-case', 'wildcard', 'x'), scalar, { maxKeys: 2 }),
);

/** Pattern-shaped values, valid or not, that reach every operator's validation. */
const valueElement = fc.oneof(
  scalar,
  fc.record({ prefix: looseArg }),
  fc.record({ suffix: looseArg }),
  fc.record({ 'equals-ignore-case': looseArg }),
  fc.record({ wildcard: fc.oneof(fc.stringMatching(/^[ab*\\]{0,6}$/), looseArg) }),
  fc.record({
    numeric: fc.array(
      fc.oneof(fc.constantFrom('>', '>=', '<', '<=', '=', '!'), fc.integer({ min: -9, max: 9 }), fc.double()),
      { maxLength: 5 },
    ),
  }),
  fc.record({ 'anything-but': looseArg }),
  fc.record({ exists: fc.oneof(fc.boolean(), scalar) }),
  fc.record({ cidr: fc.oneof(fc.constantFrom('10.0.0.0/8', '::/0', '1.2.3.4/33', 'x/1', '10.0.0.1'), looseArg) }),
);
const { pattern } = fc.letrec((tie) => ({
  pattern: fc.dictionary(fc.oneof(key, fc.constant('$or')), tie('node'), { maxKeys: 3 }),
  node: fc.oneof(
    { depthSize: 'small' },
    fc.array(valueElement, { maxLength: 3 }),
    tie('pattern'),
    fc.array(tie('pattern'), { maxLength: 3 }),
  ),
}));
const { event } = fc.letrec((tie) => ({
  event: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  value: fc.oneof({ depthSize: 'small' }, scalar, tie('event'), fc.array(tie('value'), { maxLength: 3 })),
}));

describe('pattern matcher properties', () => {
  it('never crashes on arbitrary input: a boolean or InvalidPatternError', () => {
    fc.assert(
      fc.property(
        fc.anything(),
        fc.anything(),
        (p, e) => onlyBooleanOrInvalid(() => validatePattern(p)) && onlyBooleanOrInvalid(() => matchesPattern(p, e)),
      ),
    );
  });

  it('never crashes on pattern-shaped input', () => {
    fc.assert(fc.property(pattern, event, (p, e) => onlyBooleanOrInvalid(() => matchesPattern(p, e))));
  });

  it('gives the same answer compiled, prepared, and wrapped under detail', () => {
    fc.assert(
      fc.property(pattern, event, (p, e) => {
        let expected: boolean;
        try {
          expected = matchesPattern(p, e);
        } catch {
          return true;
        }
        expect(compilePattern(p)(prepareEvent(e))).toBe(expected);
        expect(matchesPattern({ detail: p }, { detail: e })).toBe(expected);
        return true;
      }),
    );
  });

  it("matches an event with an exact-value pattern built from one of the event's own leaves", () => {
    const leafArb = fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
    );
    fc.assert(
      fc.property(
        fc.array(key, { minLength: 1, maxLength: 4 }),
        leafArb,
        fc.boolean(),
        event,
        (path, leaf, inArray, noise) => {
          // The leaf sits at `path`, possibly inside an array with other values; noise fills siblings.
          let e: unknown = inArray ? ['other', leaf, 7] : leaf;
          let p: unknown = [leaf];
          for (const k of [...path].reverse()) {
            e = { [k]: e };
            p = { [k]: p };
          }
          return matchesPattern(p, { ...noise, ...(e as object) });
        },
      ),
    );
  });

  it('anything-but of a value is the negation of the exact match for scalars of one type', () => {
    const word = fc.constantFrom('a', 'b', 'A', '', '10.0.0.1', '300');
    const number = fc.oneof(fc.integer({ min: -5, max: 5 }), fc.constantFrom(300, 0.5, -0, 4999999999, 1.000001));
    fc.assert(
      fc.property(fc.oneof(fc.tuple(word, word), fc.tuple(number, number)), ([present, excluded]) => {
        const e = { f: present };
        return matchesPattern({ f: [{ 'anything-but': excluded }] }, e) === !matchesPattern({ f: [excluded] }, e);
      }),
    );
  });

  it('finds every IPv4 address inside a CIDR written from it', () => {
    const ipv4 = fc.tuple(...[0, 1, 2, 3].map(() => fc.integer({ min: 0, max: 255 }))).map((o) => o.join('.'));
    fc.assert(
      fc.property(ipv4, fc.integer({ min: 0, max: 32 }), (ip, bits) =>
        matchesPattern({ ip: [{ cidr: `${ip}/${bits}` }] }, { ip }),
      ),
    );
  });

  it('matches a string against a wildcard cut out of it', () => {
    const piece = fc.stringMatching(/^[a-c/]{1,4}$/);
    fc.assert(
      fc.property(fc.array(fc.tuple(piece, fc.string({ maxLength: 4 })), { minLength: 1, maxLength: 5 }), (parts) => {
        const wildcard = parts.map(([literal]) => literal).join('*');
        const value = parts.map(([literal, filler]) => literal + filler).join('');
        // The last piece's filler would trail after the final literal: only a trailing star allows it.
        return matchesPattern({ s: [{ wildcard: `${wildcard}*` }] }, { s: value });
      }),
    );
  });

  it('reads any text into a value or a SyntaxError, never another error', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json().map((t) => t.slice(0, Math.max(0, t.length - 1))),
        ),
        (text) => {
          try {
            parseJsonText(text);
          } catch (err) {
            expect(err).toBeInstanceOf(SyntaxError);
          }
          return true;
        },
      ),
    );
  });

  it('reads JSON text as JSON.parse does, number spelling aside', () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        expect(JSON.stringify(parseJsonText(text))).toBe(JSON.stringify(JSON.parse(text)));
        return true;
      }),
    );
  });
});
