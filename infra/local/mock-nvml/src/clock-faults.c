/*
 * Mock time and faults. Time is milliseconds since the first nvmlInit: real CLOCK_MONOTONIC scaled
 * by MOCK_NVML_TIME_SCALE, or, with MOCK_NVML_CLOCK=manual, only what mockNvmlAdvanceMs adds (so
 * tests are deterministic). Faults fire lazily: every API call first fires those whose atMs has
 * passed. Callers hold g.lock.
 */
#include <string.h>
#include <time.h>

#include "mock.h"

unsigned long long mock_now_ms(void) {
  if (g.manualClock) return g.manualMs;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double elapsed = (double)(now.tv_sec - g.start.tv_sec) * 1000.0 + (double)(now.tv_nsec - g.start.tv_nsec) / 1e6;
  if (elapsed < 0) elapsed = 0;
  return (unsigned long long)(elapsed * g.timeScale) + g.offsetMs;
}

/* Queues one event on every set that registered this GPU for this type. */
static void deliver(int gpu, unsigned long long type, unsigned long long data, unsigned int gi, unsigned int ci) {
  for (int s = 0; s < MAX_SETS; s++) {
    mock_set *set = &g.sets[s];
    if (!set->used || !(set->mask[gpu] & type)) continue;
    if (set->count == MAX_QUEUE) { /* full: drop the oldest, as a bounded driver queue would */
      set->head = (set->head + 1) % MAX_QUEUE;
      set->count--;
    }
    nvmlEventData_t *e = &set->queue[(set->head + set->count) % MAX_QUEUE];
    e->device = &g.gpus[gpu];
    e->eventType = type;
    e->eventData = data;
    e->gpuInstanceId = gi;
    e->computeInstanceId = ci;
    set->count++;
  }
}

void fire_fault(mock_fault *f) {
  mock_gpu *gpu = &g.gpus[f->gpu];
  f->fired = 1;
  if (gpu->lost) return; /* a lost GPU reports nothing more */
  switch (f->kind) {
    case F_XID:
      deliver(f->gpu, EV_XID, f->xid, f->gi, f->ci);
      break;
    case F_ECC:
      gpu->eccVolatile[0] += f->corrected;
      gpu->eccAggregate[0] += f->corrected;
      gpu->eccVolatile[1] += f->uncorrected;
      gpu->eccAggregate[1] += f->uncorrected;
      if (f->corrected) deliver(f->gpu, EV_SINGLE_BIT_ECC, 0, f->gi, f->ci);
      if (f->uncorrected) deliver(f->gpu, EV_DOUBLE_BIT_ECC, 0, f->gi, f->ci);
      break;
    case F_REMAP_PENDING:
      gpu->remapPending = 1;
      gpu->remapUncorrectable += 1;
      deliver(f->gpu, EV_DRAM_RETIREMENT, 0, NO_INSTANCE, NO_INSTANCE);
      break;
    case F_REMAP_FAILURE:
      gpu->remapFailure = 1;
      deliver(f->gpu, EV_DRAM_RETIREMENT_FAILURE, 0, NO_INSTANCE, NO_INSTANCE);
      break;
    case F_RETIRED_PENDING:
      gpu->retiredPagesPending = 1;
      deliver(f->gpu, EV_DRAM_RETIREMENT, 0, NO_INSTANCE, NO_INSTANCE);
      break;
    case F_RECOVERY_ACTION:
      gpu->recoveryAction = f->value;
      deliver(f->gpu, EV_RECOVERY_ACTION, f->value, NO_INSTANCE, NO_INSTANCE);
      break;
    case F_NVLINK_DOWN:
      if (f->value < MAX_LINKS) gpu->linkDown[f->value] = 1;
      break;
    case F_RESET_FAILS:
      gpu->resetFails = 1;
      break;
    case F_PCIE_LINK:
      if (f->value) gpu->pcieWidth = f->value;
      if (f->value2) gpu->pcieGen = f->value2;
      break;
    case F_FABRIC:
      gpu->fabricState = f->value;
      gpu->fabricStatus = f->value2;
      break;
    case F_NVLINK_ERRORS:
      gpu->hasLinkErrors = 1;
      for (int k = 0; k < 4; k++) gpu->linkErrors[k] += f->linkErrors[k];
      break;
    case F_SRAM_THRESHOLD:
      gpu->hasSram = 1;
      gpu->sramThresholdExceeded = 1;
      break;
    case F_GPU_LOST:
      gpu->lost = 1;
      for (int s = 0; s < MAX_SETS; s++)
        if (g.sets[s].used && g.sets[s].mask[f->gpu]) g.sets[s].lostPending |= 1u << f->gpu;
      break;
  }
}

void fire_due_faults(void) {
  unsigned long long now = mock_now_ms();
  /* in file order among equal times, so a scenario reads top to bottom */
  for (;;) {
    mock_fault *next = NULL;
    for (int i = 0; i < g.faultCount; i++) {
      mock_fault *f = &g.faults[i];
      if (!f->fired && f->atMs <= now && (!next || f->atMs < next->atMs)) next = f;
    }
    if (!next) break;
    fire_fault(next);
  }
}

long long next_fault_due_ms(void) {
  long long best = -1;
  for (int i = 0; i < g.faultCount; i++)
    if (!g.faults[i].fired && (best < 0 || (long long)g.faults[i].atMs < best)) best = (long long)g.faults[i].atMs;
  return best;
}
