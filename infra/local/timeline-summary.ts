/** What the summary counts. Built by the stack from what it observed; printed and put in the report. */
export interface Summary {
  eventsByDetailType: Record<string, number>;
  actionsByKind: Record<string, number>;
  nodesCordoned: string[];
  nodesTainted: string[];
  nodesQuarantined: string[];
  podsEvicted: number;
  podsRescheduled: number;
  podsPending: Record<string, number>;
  deliveryFailures: Record<string, number>;
  deadLetters: number;
  expectations?: { check: string; ok: boolean; detail: string }[];
}

const list = (xs: string[]) => (xs.length ? xs.join(', ') : 'none');
const counts = (r: Record<string, number>) =>
  Object.keys(r).length
    ? Object.entries(r)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')
    : 'none';

export function formatSummary(s: Summary): string[] {
  const lines = [
    'Summary',
    `  events:            ${counts(s.eventsByDetailType)}`,
    `  actions:           ${counts(s.actionsByKind)}`,
    `  nodes cordoned:    ${list(s.nodesCordoned)}`,
    `  nodes tainted:     ${list(s.nodesTainted)}`,
    `  GPUs quarantined:  ${list(s.nodesQuarantined)}`,
    `  pods evicted:      ${s.podsEvicted}, rescheduled: ${s.podsRescheduled}, pending: ${counts(s.podsPending)}`,
    `  delivery failures: ${counts(s.deliveryFailures)}`,
    `  dead letters:      ${s.deadLetters}`,
  ];
  for (const x of s.expectations ?? []) lines.push(`  expect ${x.ok ? 'PASS' : 'FAIL'}  ${x.check}: ${x.detail}`);
  return lines;
}

/**
 * The run's last line, one verdict a person can read without scrolling: PASS when every expectation
 * held, FAIL naming how many did not, or that the scenario set none (or was not judged).
 */
export function verdictLine(s: Summary): string {
  const checks = s.expectations;
  if (checks === undefined)
    return 'verdict: not judged (the scenario expects nothing, or the run ended before its end)';
  const failed = checks.filter((x) => !x.ok);
  if (failed.length === 0) return `verdict: PASS, ${checks.length} of ${checks.length} expectations hold`;
  return (
    `verdict: FAIL, ${failed.length} of ${checks.length} expectations do not hold: ` +
    failed.map((x) => x.check).join('; ')
  );
}
