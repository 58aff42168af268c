/**
 * A request-level AWS error: the whole PutEvents call fails. Serialized the AWS JSON 1.1 way
 * (`x-amzn-ErrorType` header + `{"__type","message"}` body) so the real SDK throws an exception
 * whose `name` is `code` and whose `$metadata.httpStatusCode` is `status`.
 */
export class AwsRequestError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
    this.name = code;
  }
}

/** Per-entry error codes PutEvents documents (PutEventsResultEntry.ErrorCode). */
export type EntryErrorCode =
  'InvalidArgument' | 'MalformedDetail' | 'NotAuthorizedForSourceException' | 'InternalFailure' | 'ThrottlingException';

/** Retryable per AWS: the caller should resend just these entries. */
export const RETRYABLE_ENTRY_CODES: ReadonlySet<string> = new Set(['InternalFailure', 'ThrottlingException']);
