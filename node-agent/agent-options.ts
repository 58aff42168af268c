/**
 * What the node agent (agent.ts) is given: where its events go, its NVML and clock, its thresholds and
 * windows, the files it keeps beside its spool, and the node's other sources (kernel log, PodResources);
 * and the constants its steps run by.
 */
import type { AgentMetrics } from './agent-metrics.ts';
import type { HealthThresholds } from './collectors/health.ts';
import type { PodResourcesSource } from './collectors/pod-resources-source.ts';
import type { OutgoingEvent } from './events.ts';
import type { AgentHealth } from './http.ts';
import { NVML_EVENT, type NvmlEventWatcherOptions } from './nvml/events.ts';
import type { Nvml } from './nvml/nvml.ts';
import type { PublisherLog } from './publisher/types.ts';

/** Where events go: the Publisher, or stdout in a dry run. Must not block or throw. */
export interface EventSink {
  publish(event: OutgoingEvent): unknown;
}

/** XID critical errors, plus the events that mean "sample now": ECC, DRAM retirement, recovery action. */
export const AGENT_EVENT_MASK =
  NVML_EVENT.xidCriticalError |
  NVML_EVENT.singleBitEcc |
  NVML_EVENT.doubleBitEcc |
  NVML_EVENT.dramRetirement |
  NVML_EVENT.dramRetirementFailure |
  NVML_EVENT.gpuRecoveryAction;

/** An SBE storm must not turn into a sample per event: at most one event-triggered sample per second. */
export const EVENT_SAMPLE_MIN_GAP_MS = 1_000;

export interface AgentOptions {
  nodeName: string;
  nvml: Nvml;
  sink: EventSink;
  /** Wall-clock milliseconds: event times, windows, dedupe. */
  now: () => number;
  procRoot: string;
  thresholds: HealthThresholds;
  utilizationWindowMs: number;
  inventoryIntervalMs: number;
  /** XID_AGGREGATE_WINDOW_MS (default 60 s): how long repeats of an application XID are held. */
  xidAggregateWindowMs?: number;
  /** false (`--once`): no NVML event set is created. */
  watchEvents?: boolean;
  watcher?: NvmlEventWatcherOptions;
  metrics?: AgentMetrics;
  health?: AgentHealth;
  log?: PublisherLog;
  /**
   * Where the last-seen uncorrected-ECC counters are kept across restarts (beside the spool). None:
   * in memory only, and a restart re-reports an old count as new errors.
   */
  eccStatePath?: string;
  /**
   * Where the GPUs this node has had are remembered (beside the spool), so one that NVML no longer
   * lists at start — it fell off the bus before the agent could watch it — is reported
   * (`gpu-missing`) instead of silently not being there.
   */
  gpuMemoryPath?: string;
  /**
   * How many GPUs this node should have (EXPECTED_GPUS: its instance type's). NVML listing fewer at
   * start fires `gpu-count` — the one way to see a GPU that was gone before any agent ran here.
   */
  expectedGpus?: number;
  /**
   * The kernel-log follower: before an NVML XID is published, the agent lets it read what the
   * kernel logged meanwhile (at most KMSG_CATCH_UP_MS), so the kernel's line — with the pid, the
   * process and an NVLink5 XID's Fatal/Nonfatal — is the first sighting when it exists.
   */
  kernelLog?: {
    catchUp(timeoutMs: number): Promise<boolean>;
    /** The follower ended (the log not readable, or the agent stopping): no XID comes from the kernel log now. */
    readonly ended?: boolean;
  };
  /**
   * The kubelet's PodResources API (collectors/pod-resources-source.ts), read at each sample: which
   * pods hold which GPU. None, or unreadable: the events carry no `holders` (unknown).
   */
  podResources?: PodResourcesSource;
}

/** How long an NVML XID waits for the kernel log to be read; the line is usually there already. */
export const KMSG_CATCH_UP_MS = 100;
