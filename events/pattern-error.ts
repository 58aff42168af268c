/**
 * The one error the pattern API throws. The message has AWS's shape
 * (`Event pattern is not valid. Reason: ...`) so the CLI and the local bus can return it verbatim,
 * the way `PutRule` and `TestEventPattern` do; `reason` is the part after the prefix.
 */
export class InvalidPatternError extends Error {
  override name = 'InvalidPatternError';
  readonly reason: string;

  constructor(reason: string) {
    super(`Event pattern is not valid. Reason: ${reason}`);
    this.reason = reason;
  }
}
