/**
 * What the scheduler remembers about pod shapes (requests, tolerations, selectors) that fitted no
 * node: kube-scheduler's message, and the capacity epoch at which that was true. Capacity only
 * grows on a node through an epoch bump that names the node (a pod left it, it lost a cordon or a
 * taint, a selected label changed), so a shape unfit at epoch e can fit now only on a node freed
 * since e — and the first of those in name order is where the full first-fit scan would bind it.
 *
 * Without this, every pod leaving a node sent every waiting shape back over the whole fleet: in the
 * 10,000-node storm, 4,000 evicted pods' replacements × 10,000 nodes per freed pod was 70% of the
 * simulator's CPU. The message of a shape still unfit after such a retry keeps the counts of its
 * last full pass (kube-scheduler too rewrites it only when it retries the pod over every node).
 */
interface Verdict {
  epoch: number;
  list: number;
  reason: string;
  /** Node label keys the shape selects on (nodeSelector, required node affinity). */
  keys: readonly string[];
}

const MAX_LOG = 100_000;
const MAX_SHAPES = 10_000;

export type Recall = { unfit: string } | { retry: string[]; reason: string } | undefined;

export class UnfitShapes {
  private readonly shapes = new Map<string, Verdict>();
  /** Shapes remembered, by a node label key they select on. */
  private readonly byKey = new Map<string, Set<string>>();
  /** Nodes that gained room, by epoch (ascending). */
  private log: { epoch: number; node: string }[] = [];
  /** Epochs up to this one were trimmed from the log: verdicts that old need a full pass. */
  private floor = -1;

  /** Node `node` gained room at `epoch`. */
  freed(epoch: number, node: string): void {
    this.log.push({ epoch, node });
    if (this.log.length > MAX_LOG) {
      const cut = this.log.length >> 1;
      this.floor = this.log[cut - 1]!.epoch;
      this.log = this.log.slice(cut);
    }
  }

  /**
   * At (`epoch`, node list `list`): `unfit` (fits nowhere, with its message), `retry` (it fitted
   * nowhere before; only these nodes, freed since, can take it now), or undefined (not known:
   * scan every node).
   */
  recall(shape: string, epoch: number, list: number): Recall {
    const v = this.shapes.get(shape);
    if (!v || v.list !== list || v.epoch < this.floor) return undefined;
    if (v.epoch === epoch) return { unfit: v.reason };
    let lo = 0;
    let hi = this.log.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.log[mid]!.epoch <= v.epoch) lo = mid + 1;
      else hi = mid;
    }
    return { retry: [...new Set(this.log.slice(lo).map((e) => e.node))].sort(), reason: v.reason };
  }

  /** `shape` (selecting on node label `keys`) fits no node at (`epoch`, `list`). */
  unfit(shape: string, epoch: number, list: number, reason: string, keys: readonly string[] = []): void {
    if (this.shapes.size > MAX_SHAPES) {
      this.shapes.clear();
      this.byKey.clear();
    }
    this.shapes.set(shape, { epoch, list, reason, keys });
    for (const k of keys) {
      let s = this.byKey.get(k);
      if (!s) this.byKey.set(k, (s = new Set()));
      s.add(shape);
    }
  }

  /**
   * A node's labels `changed` while no waiting pod selected on them (so no epoch bump sent anyone
   * back): what is remembered of shapes selecting on them is no longer known, since the node may
   * now be theirs. The next pod of such a shape scans every node.
   */
  forgetSelecting(changed: readonly string[]): void {
    for (const k of changed) {
      const shapes = this.byKey.get(k);
      if (!shapes) continue;
      this.byKey.delete(k);
      for (const shape of shapes) this.shapes.delete(shape);
    }
  }
}
