/**
 * A deadline for every AWS SDK call the functions make (EventBridge PutEvents, Parameter Store
 * GetParameter), as the Kubernetes adapter has one (kube/pooled-agent.ts, 15 s): a hung endpoint
 * must fail the call as retryable, not hold the invocation until Lambda's timeout (issue #29).
 *
 * Smithy's NodeHttpHandler, under every v3 client, sets no request timeout by default, and in the
 * version package-lock.json holds a `requestTimeout` alone only logs a warning ("a request has
 * exceeded the configured … requestTimeout. Init client requestHandler with throwOnRequestTimeout=true
 * to turn this into an error"): hence `throwOnRequestTimeout`. The SDK retries a timed-out call
 * (3 attempts by default), so a dead endpoint costs at most ~3 × (connect + request) ≈ 15 s.
 */
export const AWS_TIMEOUTS = { connectionTimeout: 2_000, requestTimeout: 5_000, throwOnRequestTimeout: true } as const;

/** The part of a v3 client's configuration that gives it these deadlines. */
export function withAwsTimeouts<C extends object>(config: C): C & { requestHandler: typeof AWS_TIMEOUTS } {
  return { ...config, requestHandler: AWS_TIMEOUTS };
}
