/**
 * The handler variant for a GPU-action owner (gpu-actions.ts): a `GPU Action Result` reaches the owner
 * whose request it answers, and no other. The bus routes by `detail.owner` (each owner's rule, e.g.
 * events/patterns/gpu-action.json for remediate); this checks it again, so an answer a rule let through by
 * mistake is acknowledged and logged, never acted on by the wrong reflex.
 */
import { GPU_ACTION_RESULT, LEGACY_GPU_ACTION_OWNER, type GpuActionResultDetail } from '../../events/index.ts';
import { isAnswerFor, type GpuActionOwner } from './gpu-actions.ts';
import { eventHandler, type EventHandlerSpec } from './handler.ts';

export interface GpuAnswerHandlerSpec extends Omit<EventHandlerSpec<GpuActionResultDetail>, 'detailTypes'> {
  owner: GpuActionOwner;
}

export function gpuAnswerHandler(spec: GpuAnswerHandlerSpec) {
  return eventHandler<GpuActionResultDetail>({
    name: spec.name,
    detailTypes: [GPU_ACTION_RESULT],
    logger: spec.logger,
    async handle(event, ctx) {
      if (!isAnswerFor(event.detail, spec.owner)) {
        const owner = event.detail.owner ?? LEGACY_GPU_ACTION_OWNER;
        ctx.logger.warn('GPU action answer for another owner: ignored', { owner, mine: spec.owner });
        return { ignored: `answers a request of ${owner}, not of ${spec.owner}` };
      }
      return spec.handle(event, ctx);
    },
  });
}
