/**
 * Connection reuse for @kubernetes/client-node. Its KubeConfig builds a NEW http(s).Agent for
 * every request (`applySecurityAuthentication` → `createAgent`), so each API call opens its own
 * TCP connection — and, against a real API server, does a fresh TLS handshake. Measured on the
 * remediation storm (150 of 1,500 nodes failing, ~15-20 calls per remediation, one Node thread):
 * connect/close work was about a tenth of the CPU.
 *
 * This subclass lets the library compute its agent as usual (so CA, client certificate,
 * skip-TLS-verify, server name stay exactly what the kubeconfig says), then swaps it for a
 * keep-alive agent of the same class built from the same options, one per distinct option set.
 * Agents the pool does not understand (proxies: socks, http(s)-proxy-agent) pass through as made.
 * Credentials that are headers (bearer tokens, exec plugins) are set per request by the library,
 * never on the agent, so sharing a connection never shares a token. Idle sockets are unref'd by
 * Node's agent, so a CLI process still exits when its work is done.
 */
import http from 'node:http';
import https from 'node:https';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

/** TLS options that make one agent differ from another (those createAgent sets). */
const IDENTITY_KEYS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'rejectUnauthorized',
  'servername',
  'timeout',
] as const;

/** Distinct option sets kept; beyond this (rotating client certs) the oldest agent is closed. */
const MAX_AGENTS = 8;

function identity(kind: string, options: Record<string, unknown>): string {
  const parts = IDENTITY_KEYS.map((k) => {
    const v = options[k];
    if (v === undefined || v === null) return '';
    if (Buffer.isBuffer(v)) return v.toString('base64');
    return typeof v === 'string' ? v : JSON.stringify(v);
  });
  return JSON.stringify([kind, ...parts]);
}

/**
 * How long one API request may go unanswered. client-node sets no timeout of its own, so a hung
 * API server (a dropped connection with no RST, an overloaded apiserver) would hold a function's
 * invocation for its whole Lambda timeout; aborted here, the call fails as a TransientError and the
 * platform retries it. Generous next to a healthy API server (reads and patches answer in
 * milliseconds, a page of 500 pods in well under a second).
 */
export const KUBE_REQUEST_TIMEOUT_MS = 15_000;

export class PooledKubeConfig extends KubeConfig {
  private readonly agents = new Map<string, http.Agent>();

  /** `requestTimeoutMs`: each API request's limit (0: none). Watches are not API requests here. */
  constructor(private readonly requestTimeoutMs = KUBE_REQUEST_TIMEOUT_MS) {
    super();
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const made = context.getAgent();
    if (made) context.setAgent(this.pooled(made));
    // Every request of the generated API passes here once; a signal the caller set wins.
    if (this.requestTimeoutMs > 0 && !context.getSignal())
      context.setSignal(AbortSignal.timeout(this.requestTimeoutMs));
  }

  /** How many keep-alive agents are held (for tests). */
  get pooledAgents(): number {
    return this.agents.size;
  }

  /** Closes the pooled agents' sockets; later requests open new ones. */
  destroyAgents(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }

  private pooled(made: http.Agent | https.Agent): http.Agent | https.Agent {
    // Exact classes only: a subclass (a proxy agent) connects differently and is left alone.
    const proto = Object.getPrototypeOf(made) as object;
    const kind = proto === https.Agent.prototype ? 'https' : proto === http.Agent.prototype ? 'http' : undefined;
    if (kind === undefined) return made;
    const options = (made as unknown as { options?: Record<string, unknown> }).options ?? {};
    const key = identity(kind, options);
    let agent = this.agents.get(key);
    if (!agent) {
      const opts = { ...options, keepAlive: true };
      agent = kind === 'https' ? new https.Agent(opts) : new http.Agent(opts);
      if (this.agents.size >= MAX_AGENTS) {
        const [oldestKey, oldest] = this.agents.entries().next().value as [string, http.Agent];
        oldest.destroy();
        this.agents.delete(oldestKey);
      }
      this.agents.set(key, agent);
    }
    made.destroy();
    return agent;
  }
}
