/** What `startStack` (stack.ts) takes and gives back. */
import type { KubeSim } from './kube/index.ts';
import type { StackReport } from './report.ts';
import type { StackTarget } from './stack-alibaba.ts';

/**
 * The whole pipeline on one machine: the simulated cluster (or a real one through a kubeconfig),
 * the local EventBridge with the repository's serverless.yml (functions run in-process), and one
 * node agent per GPU node on its own mock NVML box. `virtual` runs on a manual clock in steps
 * (seconds for a minute of scenario); `wall` runs in real time. Faults enter only at the NVML
 * layer (and the kernel log); the timeline prints only what components were seen doing.
 */
export interface StackOptions {
  clock: 'wall' | 'virtual';
  /** Act on this cluster instead of the simulated one. */
  kubeconfig?: string;
  /**
   * The cluster of `kubeconfig` served the simulator's marker (cluster-identity.ts). Otherwise it
   * is taken for a real one, and the node labeler writes nothing there: the mock GPUs' driver,
   * CUDA and model are not its nodes'. The caller decided that writing to it is wanted.
   */
  kubeconfigIsSimulated?: boolean;
  reportPath?: string;
  /** Timeline and progress lines. */
  out: (line: string) => void;
  colour?: boolean;
  /** Overrides the scenario's durationSeconds. */
  durationMs?: number;
  /** Virtual step (default 100 ms). */
  stepMs?: number;
  /**
   * Virtual only: once nothing has happened for `settleMs` (default 30 s of scenario time), time
   * moves in steps of up to this many ms (default: the agents' sample interval) until the next
   * scenario step, so quiet hours replay in seconds. 0 keeps every step at `stepMs`.
   */
  quietStepMs?: number;
  /** The routing table (default: the repository's serverless.yml); tests point it at fixtures. */
  serverlessYml?: string;
  /** Events, deliveries, dead letters and timeline entries kept for the report: the last N of each (default 10,000). */
  historySize?: number;
  /**
   * `aws` (default): the local EventBridge with serverless.yml. `alibaba`: Alibaba EventBridge's data
   * plane with the ROS template's rules, the functions invoked as Function Compute 3.0 does (stack-alibaba.ts).
   */
  target?: StackTarget;
}

export interface StackResult {
  report: StackReport;
  /** The simulated cluster, still readable after the run (undefined with --kubeconfig). Closed. */
  sim: KubeSim | undefined;
  exitCode: number;
}

export interface LocalStack {
  /** Runs the scenario to its end (or until `stop()`), then shuts everything down. */
  run(): Promise<StackResult>;
  /** Ends a running stack at the next step (Ctrl-C with --follow). */
  stop(): void;
}
