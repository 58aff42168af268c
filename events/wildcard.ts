/**
 * The `wildcard` matcher: `*` stands for any run of characters (empty included); `\*` is a
 * literal star and `\\` a literal backslash. Any other escape, a trailing backslash and `**`
 * are refused, as AWS does.
 *
 * Matching never uses a RegExp: a glob with only `*` is matched by anchoring the first and last
 * literal pieces and finding the middle ones left to right, which is linear-ish and cannot blow up.
 */
export interface Wildcard {
  /** Literal pieces between the stars; a pattern without stars has exactly one piece. */
  pieces: string[];
  /** Unescaped `*` characters, used by the complexity limit. */
  stars: number;
}

/** Parses a wildcard pattern. Throws an Error whose message is AWS's reason. */
export function parseWildcard(text: string): Wildcard {
  const pieces: string[] = [];
  let current = '';
  let previousWasStar = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\\') {
      const next = text[i + 1];
      if (next !== '*' && next !== '\\') throw new Error(`Invalid escape character at pos ${i + 1}`);
      current += next;
      i++;
      previousWasStar = false;
    } else if (ch === '*') {
      if (previousWasStar) throw new Error(`Consecutive wildcard characters at pos ${i}`);
      pieces.push(current);
      current = '';
      previousWasStar = true;
    } else {
      current += ch;
      previousWasStar = false;
    }
  }
  pieces.push(current);
  return { pieces, stars: pieces.length - 1 };
}

/** True when the whole of `value` matches the wildcard. */
export function matchWildcard(w: Wildcard, value: string): boolean {
  const { pieces } = w;
  const first = pieces[0] ?? '';
  if (pieces.length === 1) return value === first;
  const last = pieces[pieces.length - 1] ?? '';
  if (value.length < first.length + last.length) return false;
  if (!value.startsWith(first) || !value.endsWith(last)) return false;
  let at = first.length;
  const end = value.length - last.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const piece = pieces[i] ?? '';
    const found = value.indexOf(piece, at);
    if (found < 0 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}
