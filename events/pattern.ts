/**
 * EventBridge event-pattern matching: the public API.
 *
 * - `compilePattern(pattern)` validates once and returns a reusable matcher; use it wherever one
 *   pattern meets many events (the local bus). Pass it a `prepareEvent(event)` to index an event
 *   once for several rules.
 * - `matchesPattern(pattern, event)` is the one-shot form; `validatePattern` only checks.
 * - Everything EventBridge refuses throws `InvalidPatternError`, with AWS's reason where known.
 *
 * Inputs are parsed JSON values. Parse pattern and event text with `JSON.parse`: it keeps the last
 * of duplicate keys, as AWS does, and numbers compare by value (`300`, `300.0` and `3e2` are the
 * same number here and on AWS), so no number spelling survives that matters. Semantics and
 * deliberate deviations: docs/event-patterns.md.
 */
import { InvalidPatternError } from './pattern-error.ts';
import { matchBranches, PreparedEvent } from './pattern-match.ts';
import { compileBranches } from './pattern-validate.ts';

export { InvalidPatternError, PreparedEvent };

/** A compiled pattern: true when the event (raw, or prepared once) matches. Never throws. */
export type PatternMatcher = (event: unknown) => boolean;

/** Indexes an event once so that several compiled patterns can match it without re-walking it. */
export function prepareEvent(event: unknown): PreparedEvent {
  return event instanceof PreparedEvent ? event : new PreparedEvent(event);
}

/** Validates `pattern` and returns a matcher. Throws InvalidPatternError. */
export function compilePattern(pattern: unknown): PatternMatcher {
  const branches = compileBranches(pattern);
  return (event) => matchBranches(branches, prepareEvent(event));
}

/** Throws InvalidPatternError when EventBridge would refuse the pattern. */
export function validatePattern(pattern: unknown): void {
  compileBranches(pattern);
}

/** One-shot match. Throws InvalidPatternError for an invalid pattern. */
export function matchesPattern(pattern: unknown, event: unknown): boolean {
  return compilePattern(pattern)(event);
}
