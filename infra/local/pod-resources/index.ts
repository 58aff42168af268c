/**
 * The stack's simulated kubelets' PodResources endpoints, one unix socket per agent node
 * (`<node dir>/pod-resources/kubelet.sock`, the node's /var/lib/kubelet/pod-resources/kubelet.sock).
 * Served only with the simulated cluster: against a real cluster the stack runs no kubelet.
 */
import { PodResourcesServer } from './server.ts';
import { podResourcesState, type NodeStateSources } from './node-state.ts';

export { PodResourcesServer } from './server.ts';
export { podResourcesState, type NodeStateSources } from './node-state.ts';

export class StackPodResources {
  private readonly servers = new Map<string, PodResourcesServer>();

  async add(socketPath: string, sources: NodeStateSources): Promise<void> {
    if (this.servers.has(sources.node)) return;
    this.servers.set(sources.node, await PodResourcesServer.start(socketPath, podResourcesState(sources)));
  }

  async remove(node: string): Promise<void> {
    const s = this.servers.get(node);
    this.servers.delete(node);
    await s?.close();
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.servers.values()].map((s) => s.close()));
    this.servers.clear();
  }
}
