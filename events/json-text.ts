/**
 * A small strict JSON reader (RFC 8259) for pattern and event text. It differs from JSON.parse in
 * one way: numbers come back as JsonNumber, keeping their spelling, because EventBridge matches
 * exact numbers by spelling as well as by value (see json-number.ts).
 *
 * Duplicate keys: the last one wins, as in JSON.parse and as AWS does for patterns
 * (conformance cases `er-duplicate-key-last-wins-*`, `ls-complex-multi-key`). Errors are
 * SyntaxErrors naming the character position.
 */
import { MAX_JSON_DEPTH } from './json-depth.ts';
import { JsonNumber } from './json-number.ts';

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
/** Deeper documents are refused (the reader recurses; 1,000 levels is far from the stack's limit). */
const MAX_DEPTH = MAX_JSON_DEPTH;

class Reader {
  at = 0;
  constructor(readonly text: string) {}

  fail(what: string): never {
    throw new SyntaxError(`${what} at position ${this.at}`);
  }

  space(): void {
    while (this.at < this.text.length && ' \t\n\r'.includes(this.text[this.at] as string)) this.at++;
  }

  value(depth: number): unknown {
    this.space();
    const ch = this.text[this.at];
    // `depth` containers enclose this value: one more may open only while under the limit.
    if (depth >= MAX_DEPTH && (ch === '{' || ch === '[')) this.fail('JSON nested too deeply');
    if (ch === '{') return this.object(depth);
    if (ch === '[') return this.array(depth);
    if (ch === '"') return this.string();
    for (const [word, v] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.text.startsWith(word, this.at)) {
        this.at += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = this.at;
    const m = NUMBER.exec(this.text);
    if (!m)
      return this.fail(ch === undefined ? 'Unexpected end of JSON' : `Unexpected character ${JSON.stringify(ch)}`);
    this.at += m[0].length;
    return new JsonNumber(m[0]);
  }

  object(depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.at++;
    this.space();
    if (this.text[this.at] === '}') {
      this.at++;
      return out;
    }
    for (;;) {
      this.space();
      if (this.text[this.at] !== '"') this.fail('Expected a string key');
      const key = this.string();
      this.space();
      if (this.text[this.at] !== ':') this.fail('Expected ":"');
      this.at++;
      // defineProperty: a "__proto__" key is an ordinary field, never the prototype.
      Object.defineProperty(out, key, {
        value: this.value(depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      this.space();
      const sep = this.text[this.at++];
      if (sep === '}') return out;
      if (sep !== ',') this.fail('Expected "," or "}"');
    }
  }

  array(depth: number): unknown[] {
    const out: unknown[] = [];
    this.at++;
    this.space();
    if (this.text[this.at] === ']') {
      this.at++;
      return out;
    }
    for (;;) {
      out.push(this.value(depth + 1));
      this.space();
      const sep = this.text[this.at++];
      if (sep === ']') return out;
      if (sep !== ',') this.fail('Expected "," or "]"');
    }
  }

  string(): string {
    let out = '';
    this.at++;
    for (;;) {
      const ch = this.text[this.at++];
      if (ch === undefined) this.fail('Unterminated string');
      if (ch === '"') return out;
      if (ch < ' ') this.fail('Control character in string');
      if (ch !== '\\') {
        out += ch;
        continue;
      }
      const esc = this.text[this.at++] ?? '';
      if (esc === 'u') {
        const hex = this.text.slice(this.at, this.at + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('Bad \\u escape');
        out += String.fromCharCode(parseInt(hex, 16));
        this.at += 4;
      } else if (Object.hasOwn(ESCAPES, esc)) {
        out += ESCAPES[esc];
      } else {
        this.fail('Bad escape');
      }
    }
  }
}

/** Parses JSON text; numbers become JsonNumber. Throws SyntaxError. */
export function parseJsonText(text: string): unknown {
  const reader = new Reader(text);
  const value = reader.value(0);
  reader.space();
  if (reader.at < text.length) reader.fail('Unexpected text after JSON');
  return value;
}
