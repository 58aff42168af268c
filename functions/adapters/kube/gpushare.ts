/**
 * Which cards ACK's GPU sharing gave a pod, read from the annotations its scheduler writes at bind:
 *
 * - `ALIYUN_COM_GPU_MEM_IDX`: the open-source gpushare scheduler extender's one card
 *   (AliyunContainerService/gpushare-scheduler-extender@c0b61411 pkg/utils/const.go, pod.go);
 * - `scheduler.framework.gpushare.allocation`: ACK's newer scheduler plugin, JSON
 *   `{"<container>": {"<card>": <GiB>}}`, one or more cards per container
 *   (kubeflow/arena@e30882c1 pkg/apis/types/const.go, pkg/utils/pods.go).
 *
 * Parsed here, at the edge: what cannot be read is no card (never "every card").
 */
export const GPUSHARE_INDEX_ANNOTATION = 'ALIYUN_COM_GPU_MEM_IDX';
export const GPUSHARE_ALLOCATION_ANNOTATION = 'scheduler.framework.gpushare.allocation';

const INDEX = /^\d{1,4}$/;

/** The pod's card indices, sorted, or undefined when neither annotation names one. */
export function gpushareCards(annotations: Readonly<Record<string, string>>): number[] | undefined {
  const cards = new Set<number>();
  const idx = annotations[GPUSHARE_INDEX_ANNOTATION];
  if (idx !== undefined && INDEX.test(idx)) cards.add(Number(idx));
  const raw = annotations[GPUSHARE_ALLOCATION_ANNOTATION];
  if (raw !== undefined) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (parsed && typeof parsed === 'object')
        for (const perContainer of Object.values(parsed as Record<string, unknown>)) {
          if (!perContainer || typeof perContainer !== 'object') continue;
          for (const card of Object.keys(perContainer)) if (INDEX.test(card)) cards.add(Number(card));
        }
    } catch {
      // Not JSON: no card from it.
    }
  }
  return cards.size > 0 ? [...cards].sort((a, b) => a - b) : undefined;
}
