import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { open } from 'node:fs/promises';
import { Agent } from '../../node-agent/agent.ts';
import type { Clock } from '../../node-agent/clock.ts';
import { DEFAULT_THRESHOLDS } from '../../node-agent/collectors/health.ts';
import { podResourcesSource } from '../../node-agent/collectors/pod-resources-source.ts';
import { loadMockNvmlControls, type MockNvmlControls } from '../../node-agent/nvml/mock-controls.ts';
import { Nvml } from '../../node-agent/nvml/nvml.ts';
import { openPublisher } from '../../node-agent/publisher/open-publisher.ts';
import type { Publisher } from '../../node-agent/publisher/publisher.ts';
import { sdkSender } from '../../node-agent/publisher/sdk-sender.ts';
import { alibabaSender } from '../../node-agent/publisher/alibaba-sender.ts';
import type { AlibabaAgentBus } from './agent-process.ts';
import type { NodeFiles } from './node-files.ts';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../functions/adapters/kube/config.ts';
import { actuatorLoop, wireActuator } from '../../node-agent/actuator-runtime.ts';
import { nvidiaSmiPersistence } from '../../node-agent/actuator/operator-ports.ts';
import { sampleLoop } from '../../node-agent/agent-runtime.ts';
import { catalogProblems } from '../../node-agent/events.ts';
import { Loop, runDueLoops } from '../../node-agent/loops.ts';
import { fenceFilePath } from './ack-fence-file.ts';
import { MOCK_DCGMI, MOCK_NVIDIA_SMI } from './agent-process.ts';
import { dcgmiProcessSync } from '../../node-agent/actuator/dcgm-diag.ts';
import { pluginLogDir } from './device-plugin.ts';

/**
 * One node's agent in-process, for `simulate`: the real `Agent` (node-agent/agent.ts) on the
 * node's own copy of the mock NVML library, publishing through the real Publisher and the AWS
 * SDK to the bus — what `gpu-reflex agent` runs, stepped by `step(ms)`: the mock's manual clock
 * moves, NVML events are drained (`pollEventsOnce`), new kernel-log lines are handed over
 * (`onKernelLine`), then the agent's own loops (node-agent/loops.ts: the sample, the actuator) run
 * where they are due on the one clock, in order.
 */
export interface AgentHostOptions {
  files: NodeFiles;
  busUrl: string;
  busName: string;
  region: string;
  sampleIntervalMs: number;
  /** Publish to Alibaba EventBridge's data plane instead (the stack's `--target alibaba`). */
  alibaba?: AlibabaAgentBus;
  /** The agent's and publisher's clock: a FakeClock the stack advances. */
  clock: Clock;
  /** The cluster the node's actuator reads its Node from (GPU actions); none: no actuator. */
  kubeconfig?: string;
  /** The actuator pauses the GPU Operator's clients around a reset (GPU_RESET_PAUSE_OPERATOR). */
  pauseOperator?: boolean;
  log?: (line: string) => void;
}

/** At most this many NVML events are handled per step; the rest wait for the next step. */
const EVENTS_PER_STEP = 64;
/** How often the actuator reads its Node for GPU actions (virtual time). */
const ACTUATOR_INTERVAL_MS = 5_000;

export class LocalAgentHost {
  private kmsgOffset = 0;
  private closed = false;
  /** The agent's loops, as its runtime runs them (sample, then the actuator), on the one clock. */
  private readonly loops: Loop[];

  private constructor(
    private readonly o: AgentHostOptions,
    private readonly mock: MockNvmlControls,
    private readonly nvml: Nvml,
    readonly agent: Agent,
    private readonly publisher: Publisher,
  ) {
    // A loop's failure is logged as the agent logs it, and the loop goes on (node-agent/loops.ts).
    const line = (m: string, f?: Record<string, unknown>) => o.log?.(f ? `${m} ${JSON.stringify(f)}` : m);
    const log = { info: line, warn: line, error: line };
    this.loops = [new Loop(sampleLoop(agent, o.sampleIntervalMs), o.clock, log)];
    if (o.kubeconfig) {
      const actuator = wireActuator({
        core: loadKubeConfig({ kubeconfigPath: o.kubeconfig }).makeApiClient(CoreV1Api),
        custom: loadKubeConfig({ kubeconfigPath: o.kubeconfig }).makeApiClient(CustomObjectsApi),
        node: o.files.node,
        nvml,
        agent,
        sink: publisher,
        clock: o.clock,
        fenceFile: fenceFilePath(o.files),
        // The mock's reset is what `nvidia-smi --gpu-reset` does to a real GPU (docs/mock-nvml.md).
        reset: async (_uuid, index) => {
          const rc = mock.resetGpu(index);
          return rc === 0
            ? ({ ok: true } as const)
            : ({ ok: false, reason: `nvidia-smi --gpu-reset: ${mock.lastError() || `NVML error ${rc}`}` } as const);
        },
        // DCGM's diagnostic through the mock dcgmi: its verdict per GPU from the node's mock scenario (`dcgmDiag`).
        dcgmi: dcgmiProcessSync(MOCK_DCGMI, { PATH: process.env.PATH, MOCK_NVML_SCENARIO: o.files.scenarioPath }),
        // Persistence mode through the mock nvidia-smi (a file beside the node's control directory).
        persistence: nvidiaSmiPersistence(MOCK_NVIDIA_SMI, 15_000, {
          PATH: process.env.PATH,
          MOCK_NVML_SCENARIO: o.files.scenarioPath,
        }),
        ...(o.pauseOperator ? { pauseOperator: { namespace: 'gpu-operator', timeoutMs: 300_000 } } : {}),
        podResourcesSocket: o.files.podResourcesSocket,
        // The stand-in writes its pod's log where the kubelet would (device-plugin.ts pluginLogDir).
        devicePlugin: { logDir: pluginLogDir(o.files), logPods: 'kube-system_nvidia-device-plugin' },
        dryRun: false,
        log: (l) => o.log?.(l),
      });
      this.loops.push(
        new Loop(
          actuatorLoop(actuator, ACTUATOR_INTERVAL_MS, { agent, sink: publisher, clock: o.clock, log }),
          o.clock,
          log,
        ),
      );
    }
  }

  static async start(o: AgentHostOptions): Promise<LocalAgentHost> {
    const mock = loadMockNvmlControls(o.files.libraryPath);
    mock.setScenario(o.files.scenarioPath);
    mock.setManualClock(true);
    const nvml = Nvml.open({ libraryPath: o.files.libraryPath });
    const client = new EventBridgeClient({
      endpoint: o.busUrl,
      region: o.region,
      maxAttempts: 1,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const publisher = await openPublisher({
      busName: o.busName,
      spoolPath: o.files.spoolPath,
      spoolMaxBytes: 64 * 1024 * 1024,
      deadLetterPath: o.files.deadLetterPath,
      // The Alibaba target: the agent's own Alibaba sender, as ALIBABA_EVENTBRIDGE_ENDPOINT selects it.
      send: o.alibaba ? alibabaSender({ ...o.alibaba, protocol: 'http' }) : sdkSender(client),
      clock: o.clock,
      // As in production (openPublisherFromConfig): checked against the catalog before it is sent.
      check: catalogProblems,
    });
    const agent = new Agent({
      nodeName: o.files.node,
      nvml,
      sink: publisher,
      now: () => o.clock.now(),
      procRoot: o.files.procRoot,
      podResources: podResourcesSource(o.files.podResourcesSocket),
      thresholds: DEFAULT_THRESHOLDS,
      utilizationWindowMs: 60_000,
      inventoryIntervalMs: 300_000,
      watcher: { sliceMs: 0 },
      // The kernel log is read here, by the host, at every step before NVML's events (step below): caught up
      // already, never ended. Without it the agent takes its GPUs' XIDs as unwatched where NVML drops a lost GPU.
      kernelLog: { catchUp: () => Promise.resolve(true) },
      eccStatePath: `${o.files.spoolPath}.ecc.json`,
      gpuMemoryPath: `${o.files.spoolPath}.gpus.json`,
    });
    o.log?.(
      `NVML ${agent.source.system.driverVersion}: ${agent.source.gpus.length} GPUs ` +
        `(${agent.source.gpus[0]?.name ?? 'none'})`,
    );
    return new LocalAgentHost(o, mock, nvml, agent, publisher);
  }

  /** Moves this node's NVML time by `ms`, then does what the agent's loops would have done. */
  async step(ms: number): Promise<void> {
    if (ms > 0) this.mock.advanceMs(ms);
    // The kernel log first, as the agent's runtime reads it before publishing an NVML XID (its
    // KernelLogCatchUp): the driver's line — pid, NVLink5 words — is the sighting that goes out.
    await this.readKernelLog();
    for (let i = 0; i < EVENTS_PER_STEP; i++) if ((await this.agent.pollEventsOnce(0)).length === 0) break;
    await runDueLoops(this.loops, this.o.clock.now());
  }

  private async readKernelLog(): Promise<void> {
    const fh = await open(this.o.files.kmsgPath, 'r');
    try {
      const { size } = await fh.stat();
      if (size <= this.kmsgOffset) return;
      const buf = Buffer.alloc(size - this.kmsgOffset);
      await fh.read(buf, 0, buf.length, this.kmsgOffset);
      const end = buf.lastIndexOf(0x0a) + 1; // a half-written line waits for the next read
      this.kmsgOffset += end;
      for (const line of buf.subarray(0, end).toString('utf8').split('\n')) if (line) this.agent.onKernelLine(line);
    } finally {
      await fh.close();
    }
  }

  /** Resolves once the publisher has nothing in flight (what it could send was sent). */
  whenIdle(): Promise<void> {
    return this.publisher.whenIdle();
  }

  /** As the agent's runtime stops: last utilization window, publisher closed, watcher, NVML. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.agent.flush();
    await this.publisher.close({ deadlineMs: 2_000 });
    await this.agent.close();
    this.nvml.close();
  }
}
