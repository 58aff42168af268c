/** A scenario that cannot be read or is invalid: the message names the file and every bad field. */
export class ScenarioError extends Error {
  override name = 'ScenarioError';
}
