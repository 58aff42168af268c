/**
 * Whether an evicted pod shows as evicted: gone from the store, or terminating (a deletionTimestamp).
 * A pod still there and not terminating was not evicted — the form this replaces
 * (`deletionTimestamp ?? 'gone'`, then truthy) passed for that pod too (issue #26).
 */
export function evicted(pod: { metadata: { deletionTimestamp?: string | undefined } } | undefined): boolean {
  return pod === undefined || pod.metadata.deletionTimestamp !== undefined;
}
