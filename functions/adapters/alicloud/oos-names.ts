/**
 * How a parameter reference names Alibaba's OOS (alicloud/oos.ts) rather than AWS Parameter Store:
 * `oos:<name>` a common parameter, `oos-secret:<name>` an encrypted one. Apart from oos.ts so that
 * adapters/ssm.ts can tell the two without loading the Alibaba SDK.
 */
export const OOS_PARAMETER_PREFIX = 'oos:';
export const OOS_SECRET_PREFIX = 'oos-secret:';

export const isOosReference = (ref: string): boolean =>
  ref.startsWith(OOS_PARAMETER_PREFIX) || ref.startsWith(OOS_SECRET_PREFIX);
