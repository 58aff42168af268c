/*
 * Event sets and the mock-only control symbols. nvmlEventSetWait_v2 runs on a worker thread (koffi
 * async) while other calls run on the main thread, hence the one lock and a condition variable an
 * injected fault signals. With MOCK_NVML_CLOCK=manual a wait never blocks: nothing pending means
 * TIMEOUT at once, so tests never sleep.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "json.h"

static mock_set *as_set(nvmlEventSet_t set) {
  const char *p = (const char *)set;
  const char *lo = (const char *)&g.sets[0], *hi = (const char *)&g.sets[MAX_SETS];
  if (!p || p < lo || p >= hi || (size_t)(p - lo) % sizeof(mock_set) != 0) return NULL;
  return set->used ? set : NULL;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes) {
  BEGIN_GPU(device);
  if (!eventTypes) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (gpu->unsupported & U_EVENTS) return end(NVML_ERROR_NOT_SUPPORTED);
  *eventTypes = gpu->supportedEvents;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
  BEGIN();
  if (!set) return end(NVML_ERROR_INVALID_ARGUMENT);
  for (int i = 0; i < MAX_SETS; i++) {
    if (g.sets[i].used) continue;
    memset(&g.sets[i], 0, sizeof g.sets[i]);
    g.sets[i].magic = SET_MAGIC;
    g.sets[i].used = 1;
    *set = &g.sets[i];
    return end(NVML_SUCCESS);
  }
  return end(NVML_ERROR_MEMORY);
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set) {
  BEGIN_GPU(device);
  mock_set *s = as_set(set);
  if (!s) return end(NVML_ERROR_INVALID_ARGUMENT);
  if ((gpu->unsupported & U_EVENTS) || (eventTypes & ~gpu->supportedEvents)) return end(NVML_ERROR_NOT_SUPPORTED);
  if (gpu->registerEventsReturn) return end((nvmlReturn_t)gpu->registerEventsReturn);
  s->mask[gpu->index] |= eventTypes;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  BEGIN();
  mock_set *s = as_set(set);
  if (!s) return end(NVML_ERROR_INVALID_ARGUMENT);
  memset(s, 0, sizeof *s);
  pthread_cond_broadcast(&g.wake);
  return end(NVML_SUCCESS);
}

/* Pops one queued event, or reports a lost GPU once per set; -1 when nothing is pending. */
static nvmlReturn_t take(mock_set *s, nvmlEventData_t *data) {
  if (s->count) {
    *data = s->queue[s->head];
    s->head = (s->head + 1) % MAX_QUEUE;
    s->count--;
    return NVML_SUCCESS;
  }
  for (int i = 0; i < g.gpuCount; i++) {
    if (!(s->lostPending & (1u << i))) continue;
    s->lostPending &= ~(1u << i);
    memset(data, 0, sizeof *data);
    data->device = &g.gpus[i];
    data->gpuInstanceId = data->computeInstanceId = NO_INSTANCE;
    return NVML_ERROR_GPU_IS_LOST;
  }
  return -1;
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
  BEGIN();
  if (!data) return end(NVML_ERROR_INVALID_ARGUMENT);
  /* The timeout is real milliseconds, as for the driver: under MOCK_NVML_TIME_SCALE it spans
   * timeoutms * scale mock ms, so a scaled scenario does not make the caller's loop spin faster. */
  unsigned long long deadline = mock_now_ms() + (unsigned long long)((double)timeoutms * g.timeScale);
  for (;;) {
    mock_set *s = as_set(set);
    if (!s || !g.initCount) return end(NVML_ERROR_INVALID_ARGUMENT);
    nvmlReturn_t rc = take(s, data);
    if (rc != -1) return end(rc);
    unsigned long long now = mock_now_ms();
    if (g.manualClock || now >= deadline) return end(NVML_ERROR_TIMEOUT);
    /* Sleep until the deadline or the next scheduled fault, whichever is first (mock ms → real). */
    long long due = next_fault_due_ms();
    unsigned long long until = due >= 0 && (unsigned long long)due < deadline ? (unsigned long long)due : deadline;
    double real_ms = (double)(until > now ? until - now : 1) / g.timeScale;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long ns = ts.tv_nsec + (long long)(real_ms * 1e6) + 1000000;
    ts.tv_sec += ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    pthread_cond_timedwait(&g.wake, &g.lock, &ts);
    fire_due_faults();
  }
}
EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int t) { return nvmlEventSetWait_v2(set, data, t); }

/* ---- mock-only controls (docs/mock-nvml.md) --------------------------------------------------- */

/* Path read by the next first nvmlInit instead of $MOCK_NVML_SCENARIO; NULL or "" clears it. */
EXPORT int mockNvmlSetScenario(const char *path) {
  pthread_mutex_lock(&g.lock);
  int ok = !path || strlen(path) < sizeof g.scenarioOverride;
  if (ok) snprintf(g.scenarioOverride, sizeof g.scenarioOverride, "%s", path ? path : "");
  pthread_mutex_unlock(&g.lock);
  return ok ? 0 : NVML_ERROR_INVALID_ARGUMENT;
}

/* Clock for the next first nvmlInit: 1 manual, 0 real, -1 back to $MOCK_NVML_CLOCK. */
EXPORT int mockNvmlSetManualClock(int manual) {
  pthread_mutex_lock(&g.lock);
  g.clockOverride = manual < 0 ? -1 : manual != 0;
  pthread_mutex_unlock(&g.lock);
  return 0;
}

/* Moves mock time forward (manual clock: the only way it moves) and fires what became due. */
EXPORT int mockNvmlAdvanceMs(unsigned long long ms) {
  BEGIN();
  if (g.manualClock) g.manualMs += ms;
  else g.offsetMs += ms;
  fire_due_faults();
  pthread_cond_broadcast(&g.wake);
  return end(NVML_SUCCESS);
}

EXPORT unsigned long long mockNvmlNowMs(void) {
  pthread_mutex_lock(&g.lock);
  unsigned long long now = g.initCount ? mock_now_ms() : 0;
  pthread_mutex_unlock(&g.lock);
  return now;
}

EXPORT int mockNvmlInjectXid(unsigned int gpu, unsigned long long xid, unsigned int gpuInstanceId, unsigned int computeInstanceId) {
  BEGIN();
  if (gpu >= (unsigned int)g.gpuCount) return end(NVML_ERROR_INVALID_ARGUMENT);
  mock_fault f = {.atMs = mock_now_ms(), .gpu = (int)gpu, .kind = F_XID, .xid = xid, .gi = gpuInstanceId, .ci = computeInstanceId};
  fire_fault(&f);
  pthread_cond_broadcast(&g.wake);
  return end(NVML_SUCCESS);
}

/* One fault object in the scenario's format; fires now, or at its atMs if that is later. */
EXPORT int mockNvmlInjectFault(const char *json) {
  BEGIN();
  char err[400];
  json_value *v = json ? json_parse(json, err, sizeof err) : NULL;
  mock_fault f;
  if (!v || !fault_parse(v, &f, err, sizeof err)) {
    snprintf(g.lastError, sizeof g.lastError, "mockNvmlInjectFault: %s", json ? err : "null");
    json_free(v);
    return end(NVML_ERROR_INVALID_ARGUMENT);
  }
  json_free(v);
  if (f.atMs <= mock_now_ms()) {
    fire_fault(&f);
  } else {
    if (g.faultCount == MAX_FAULTS) return end(NVML_ERROR_INSUFFICIENT_SIZE);
    g.faults[g.faultCount++] = f;
  }
  pthread_cond_broadcast(&g.wake);
  return end(NVML_SUCCESS);
}

/*
 * What `nvidia-smi --gpu-reset -i <gpu>` does to the mock: refused while processes hold the GPU
 * (NVML_ERROR_IN_USE) or after a `resetFails` fault (NVML_ERROR_UNKNOWN, lastError says why);
 * otherwise the GPU comes back clean — volatile ECC counts cleared, a pending row remap applied,
 * the recovery action back to none, NVLinks up, a lost GPU found again.
 */
EXPORT int mockNvmlResetGpu(unsigned int index) {
  BEGIN();
  return end(reset_gpu(index));
}

/* Why the last nvmlInit or injection failed ("" when it did not). */
EXPORT const char *mockNvmlLastError(void) { return g.lastError; }
