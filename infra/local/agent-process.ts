import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeFiles } from './node-files.ts';
import { REPO_ROOT } from './stack-env.ts';
import { fenceFilePath } from './ack-fence-file.ts';

/**
 * One node's agent as a child process, for `local` (wall clock): `node bin/gpu-reflex.js agent`
 * with the environment a DaemonSet pod would get (docs/node-agent.md), pointed at the node's mock
 * NVML library and scenario, fake /proc, kernel log and spool, publishing to the local bus over
 * HTTP. Its JSON logs (stderr) go to `<node dir>/agent.log`; "agent started" there says it runs.
 * Stopped with SIGTERM, as the kubelet stops a pod.
 */
/** Alibaba EventBridge's data plane (loopback, http) and the agent's keys: the stack's `--target alibaba`. */
export interface AlibabaAgentBus {
  endpoint: string;
  accessKeyId: string;
  accessKeySecret: string;
}

export interface AgentProcessOptions {
  alibaba?: AlibabaAgentBus;
  files: NodeFiles;
  busUrl: string;
  busName: string;
  region: string;
  sampleIntervalMs: number;
  /**
   * The cluster the agent's actuator reads its Node from: with it, GPU_ACTIONS=true, the fence file
   * under the node's directory and the mock `nvidia-smi` (mock-nvml/nvidia-smi.mjs), so fence, reset
   * and probe run in `local` as on a real node.
   */
  kubeconfig?: string;
  /** GPU_RESET_PAUSE_OPERATOR=true: the actuator pauses the GPU Operator's clients around a reset. */
  pauseOperator?: boolean;
}

/** The local stack's `nvidia-smi` (only `--gpu-reset -i <uuid>`, through the node's mock NVML). */
export const MOCK_NVIDIA_SMI = join(REPO_ROOT, 'infra/local/mock-nvml/nvidia-smi.mjs');
/** The mock `dcgmi` (its diagnostic's verdict per GPU from the node's mock scenario: mock-nvml/dcgmi.mjs). */
export const MOCK_DCGMI = join(REPO_ROOT, 'infra/local/mock-nvml/dcgmi.mjs');

export function agentEnv(o: AgentProcessOptions, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    PATH: base.PATH,
    HOME: base.HOME,
    NODE_NAME: o.files.node,
    NVML_LIBRARY_PATH: o.files.libraryPath,
    MOCK_NVML_SCENARIO: o.files.scenarioPath,
    PROC_ROOT: o.files.procRoot,
    POD_RESOURCES_SOCKET: o.files.podResourcesSocket,
    KMSG_PATH: o.files.kmsgPath,
    SPOOL_PATH: o.files.spoolPath,
    DEAD_LETTER_PATH: o.files.deadLetterPath,
    AWS_ENDPOINT_URL_EVENTBRIDGE: o.busUrl,
    EVENT_BUS_NAME: o.busName,
    AWS_REGION: o.region,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    ...(o.alibaba
      ? {
          ALIBABA_EVENTBRIDGE_ENDPOINT: o.alibaba.endpoint,
          ALIBABA_CLOUD_PROTOCOL: 'http',
          ALIBABA_CLOUD_ACCESS_KEY_ID: o.alibaba.accessKeyId,
          ALIBABA_CLOUD_ACCESS_KEY_SECRET: o.alibaba.accessKeySecret,
        }
      : {}),
    UV_THREADPOOL_SIZE: '8',
    SAMPLE_INTERVAL_MS: String(o.sampleIntervalMs),
    // Several agents on one machine: let the OS pick each /healthz port.
    HTTP_PORT: '0',
    ...(o.kubeconfig
      ? {
          GPU_ACTIONS: 'true',
          GPU_ACTIONS_INTERVAL_MS: '500',
          KUBECONFIG: o.kubeconfig,
          FENCE_FILE: fenceFilePath(o.files),
          NVIDIA_SMI: MOCK_NVIDIA_SMI,
          DCGMI: MOCK_DCGMI,
          ...(o.pauseOperator ? { GPU_RESET_PAUSE_OPERATOR: 'true' } : {}),
        }
      : {}),
  };
}

export class AgentProcess {
  /** Wall time (ms) of the "agent started" log line: NVML was opened just before. */
  startedAt: number | undefined;
  exitCode: number | null | undefined;
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  readonly logPath: string;

  constructor(readonly o: AgentProcessOptions) {
    this.logPath = join(o.files.dir, 'agent.log');
    const log = createWriteStream(this.logPath);
    this.child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'gpu-reflex.js'), 'agent'], {
      cwd: REPO_ROOT,
      env: agentEnv(o),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let pending = '';
    this.child.stderr!.on('data', (chunk: Buffer) => {
      log.write(chunk);
      pending += chunk.toString('utf8');
      if (this.startedAt === undefined && pending.includes('"agent started"')) this.startedAt = Date.now();
      pending = pending.slice(pending.lastIndexOf('\n') + 1);
    });
    this.child.stdout!.on('data', (chunk: Buffer) => log.write(chunk));
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code) => {
        this.exitCode = code;
        log.end();
        resolve();
      }),
    );
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get node(): string {
    return this.o.files.node;
  }

  /** The last lines of the agent's log, for an error message. */
  tail(lines = 5): string {
    try {
      return readFileSync(this.logPath, 'utf8').trim().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  /** SIGTERM, then waits for the agent's own shutdown (publisher flush, NVML shutdown). */
  async stop(): Promise<void> {
    if (this.exitCode === undefined) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }
}
