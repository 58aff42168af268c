/**
 * The live timeline of the local stack (see timeline-entry.ts), one module per part: entries and their
 * formatting (timeline-entry.ts), bus events as lines (timeline-events.ts), deliveries' outcomes as lines
 * (timeline-deliveries.ts), the end-of-run summary (timeline-summary.ts).
 */
export {
  clockText,
  formatEntry,
  kubeconfigText,
  LINE_WIDTH,
  runningText,
  wrapWords,
  type EntryKind,
  type TimelineEntry,
} from './timeline-entry.ts';
export { eventEntry } from './timeline-events.ts';
export { countedText, deliveryEntry } from './timeline-deliveries.ts';
export { formatSummary, verdictLine, type Summary } from './timeline-summary.ts';
