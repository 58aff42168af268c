/**
 * The fence in the ACK device plugin's unhealthy-devices file, by identity, and held (issue #27).
 *
 * The file is `{"index": ["0", "3"], "uuid": ["GPU-…"]}`; a device listed under either key is held
 * out of the node's allocatable, and removing the entry returns it (Alibaba Cloud docs, "GPU device
 * plugin related operations": /etc/nvidia-device-plugin/unhealthyDevices.json). Other writers use the
 * same file: ACK's node-problem-detector before 1.2.35 wrote its own file, replacing the entries
 * there (Alibaba's notice "GPU automatic isolation feature changes", 2026), and a person can. So:
 *
 * - a fence is answered with what the file held before the GPU was added (`before`: the other
 *   writers' entries), so the functions never take another device's isolation for ours;
 * - a done fence is checked on every tick: the file must still list the GPU; when it does not, the
 *   agent writes it back and says so (`restored`, `restoredAt`, and a new GPU Action Result), or,
 *   when it cannot write, the fence fails and the functions escalate it one scope up (node taint).
 */
import type { GpuActionRequest, GpuActionState } from '../../events/index.ts';
import type { FenceFileOps } from './actuator.ts';
import { ownerOf } from './requests.ts';

type Base = Pick<GpuActionState, 'action' | 'gpuUuid' | 'at'>;

/** Whether the file lists the GPU, by UUID or by its NVML index. */
export function lists(file: { index: string[]; uuid: string[] }, uuid: string, index: number | undefined): boolean {
  return file.uuid.includes(uuid) || (index !== undefined && file.index.includes(String(index)));
}

/** Entries of the file that are neither this GPU nor the agent's own: other writers' isolation. */
function othersIn(
  file: { index: string[]; uuid: string[] },
  ours: readonly string[],
  uuid: string,
  index: number | undefined,
): string[] {
  const mine = new Set([...ours, uuid]);
  const uuids = file.uuid.filter((u) => !mine.has(u));
  const indices = file.index.filter((i) => i !== String(index)).map((i) => `index:${i}`);
  return [...new Set([...uuids, ...indices])].slice(0, 64);
}

/**
 * A held fence whose Node now counts a different number of GPU devices allocatable than when its
 * answer was written: the same answer with the new count, published again — the functions' prompt to
 * verify it by identity now (a device plugin updates the allocatable some time after the file is
 * written, and a fence answered before that was otherwise looked at again only by the next sweep).
 * Undefined when the count is unknown or unchanged. Only a prompt: the functions read the Node.
 */
export function allocatableSeen(prior: GpuActionState, allocatable: number | undefined): GpuActionState | undefined {
  if (allocatable === undefined || prior.fence === undefined || prior.fence.allocatable === allocatable)
    return undefined;
  return { ...prior, fence: { ...prior.fence, allocatable } };
}

/** Adds the GPU to the file and answers what the file says afterwards (never "done" on faith). */
export function fenceOnce(fence: FenceFileOps, uuid: string, index: number | undefined, base: Base): GpuActionState {
  let before: string[];
  try {
    before = othersIn(fence.read(), fence.ours(), uuid, index);
  } catch (err) {
    // Unknown, not empty: written from nothing, the file would lose what other writers hold out.
    return {
      ...base,
      state: 'failed',
      reason: `${err instanceof Error ? err.message : String(err)}; nothing written over it`.slice(0, 512),
      fence: { listed: false, before: [] },
    };
  }
  try {
    fence.add(uuid, index);
  } catch (err) {
    return {
      ...base,
      state: 'failed',
      reason: `fence file not written: ${err instanceof Error ? err.message : String(err)}`.slice(0, 512),
      fence: { listed: false, before },
    };
  }
  let listed: boolean;
  try {
    listed = lists(fence.read(), uuid, index);
  } catch (err) {
    return {
      ...base,
      state: 'failed',
      reason: `written, then ${err instanceof Error ? err.message : String(err)}`.slice(0, 512),
      fence: { listed: false, before },
    };
  }
  if (!listed)
    return {
      ...base,
      state: 'failed',
      reason: 'the fence file does not list the GPU after it was written',
      fence: { listed, before },
    };
  const others =
    before.length > 0
      ? `; ${before.length} other device(s) were already listed there: ${before.slice(0, 4).join(', ')}`
      : '';
  return {
    ...base,
    state: 'done',
    reason: `listed in the device plugin's unhealthy devices${others}`,
    fence: { listed, before },
  };
}

/**
 * One tick's check of a done fence: undefined while the file still lists the GPU; else the GPU is
 * written back (a new state: `restored` counted) or, when that fails, the fence is failed. Throws when
 * the file cannot be read (FenceFileOps.read): whether it lists the GPU is unknown, and nothing is
 * written over it (the caller says so and leaves the answer as it is).
 */
export function holdFence(
  fence: FenceFileOps,
  r: GpuActionRequest,
  prior: GpuActionState,
  index: number | undefined,
  at: string,
): GpuActionState | undefined {
  if (lists(fence.read(), r.gpuUuid, index)) return undefined;
  const was = prior.fence ?? { listed: true, before: [] };
  try {
    fence.add(r.gpuUuid, index);
  } catch (err) {
    return {
      ...prior,
      at,
      state: 'failed',
      reason: (
        `the fence file no longer lists the GPU and cannot be written ` +
        `back: ${err instanceof Error ? err.message : String(err)}`
      ).slice(0, 512),
      fence: { ...was, listed: false },
    };
  }
  if (!lists(fence.read(), r.gpuUuid, index))
    return {
      ...prior,
      at,
      state: 'failed',
      reason: 'the fence file no longer lists the GPU, and writing it back did not list it',
      fence: { ...was, listed: false },
    };
  const restored = (was.restored ?? 0) + 1;
  return {
    ...prior,
    at,
    reason:
      `another writer removed the GPU from the fence file; written back (${restored} ` +
      `time${restored === 1 ? '' : 's'})`,
    fence: { ...was, listed: true, restored, restoredAt: at },
  };
}

/**
 * An unfence: gpu-reflex's entry removed from the file, unless another owner's standing fence of the GPU keeps it
 * listed (the file is one per node). `prior`: its answer on the Node (a running one that could not read the file).
 */
export function unfenceOnce(
  fence: FenceFileOps,
  r: GpuActionRequest,
  index: number | undefined,
  base: Base,
  all: readonly GpuActionRequest[],
  prior?: GpuActionState,
): GpuActionState {
  const owner = ownerOf(r);
  const holds = [...new Set(all.filter((o) => o.action === 'fence' && o.gpuUuid === r.gpuUuid).map(ownerOf))];
  const others = holds.filter((o) => o !== owner);
  if (others.length > 0)
    return { ...base, state: 'done', reason: `left listed: still fenced for ${others.join(', ')}` };
  let removed: boolean;
  try {
    removed = fence.remove(r.gpuUuid);
  } catch (err) {
    // Unknown what the file holds: the GPU stays out rather than the file be rewritten from nothing;
    // tried again each tick (running, saying why) until it can be read.
    const why = err instanceof Error ? err.message : String(err);
    const reason = `${why}; not removed yet, the GPU stays listed`.slice(0, 512);
    // The same words: the answer on the Node stands (no write per tick).
    return prior?.state === 'running' && prior.reason === reason ? prior : { ...base, state: 'running', reason };
  }
  if (!removed) return { ...base, state: 'done', reason: 'not listed by gpu-reflex: left as it was' };
  // Our entry is gone; another writer's (ACK's node-problem-detector lists by index) keeps the GPU out, and
  // the answer says so rather than call the GPU out of the unhealthy devices.
  let reason = "removed from the device plugin's unhealthy devices";
  try {
    if (lists(fence.read(), r.gpuUuid, index))
      reason =
        "gpu-reflex's entry removed; still listed by another writer (their entry left as it is): " +
        'the GPU stays out of the allocatable until they remove it';
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    reason = `gpu-reflex's entry removed; whether another writer still lists it is unknown: ${why}`;
  }
  return { ...base, state: 'done', reason: reason.slice(0, 512) };
}
