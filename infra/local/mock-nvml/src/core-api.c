/*
 * Init/shutdown, error strings, and the shared lock and handle checks. The first nvmlInit (count
 * 0 → 1) reads the scenario and starts the clock at 0; the last nvmlShutdown frees it, so a test
 * can load another scenario by shutting down and initialising again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"

mock_state g = {.lock = PTHREAD_MUTEX_INITIALIZER, .clockOverride = -1};

__attribute__((constructor)) static void mock_setup(void) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&g.wake, &attr);
  pthread_condattr_destroy(&attr);
}

nvmlReturn_t begin(void) {
  pthread_mutex_lock(&g.lock);
  if (!g.initCount) {
    pthread_mutex_unlock(&g.lock);
    return NVML_ERROR_UNINITIALIZED;
  }
  fire_due_faults();
  refresh_processes_file();
  refresh_mig_file();
  refresh_control_dir();
  return NVML_SUCCESS;
}

nvmlReturn_t end(nvmlReturn_t rc) {
  pthread_mutex_unlock(&g.lock);
  return rc;
}

nvmlReturn_t resolve(const void *handle, mock_gpu **gpu, mock_mig **mig) {
  const char *p = handle;
  const char *lo = (const char *)&g.gpus[0], *hi = (const char *)&g.gpus[g.gpuCount];
  if (!p || p < lo || p >= hi) return NVML_ERROR_INVALID_ARGUMENT;
  mock_gpu *owner = &g.gpus[(size_t)(p - lo) / sizeof(mock_gpu)];
  *mig = NULL;
  if (p == (const char *)owner) {
    *gpu = owner;
  } else {
    const char *first = (const char *)&owner->migs[0], *last = (const char *)&owner->migs[owner->migCount];
    if (p < first || p >= last || (size_t)(p - first) % sizeof(mock_mig) != 0) return NVML_ERROR_INVALID_ARGUMENT;
    *gpu = owner;
    *mig = (mock_mig *)p;
  }
  return (*gpu)->lost ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  pthread_mutex_lock(&g.lock);
  if (g.initCount > 0) {
    g.initCount++;
    return end(NVML_SUCCESS);
  }
  const char *path = g.scenarioOverride[0] ? g.scenarioOverride : getenv("MOCK_NVML_SCENARIO");
  const char *clock = getenv("MOCK_NVML_CLOCK");
  const char *scale = getenv("MOCK_NVML_TIME_SCALE");
  g.manualClock = g.clockOverride >= 0 ? g.clockOverride : clock && strcmp(clock, "manual") == 0;
  g.timeScale = scale ? atof(scale) : 1.0;
  if (g.timeScale <= 0) g.timeScale = 1.0;
  g.manualMs = g.offsetMs = 0;
  clock_gettime(CLOCK_MONOTONIC, &g.start);
  if (!path || !*path) {
    snprintf(g.lastError, sizeof g.lastError, "MOCK_NVML_SCENARIO is not set");
    if (!getenv("MOCK_NVML_QUIET")) fprintf(stderr, "mock-nvml: %s\n", g.lastError);
    return end(NVML_ERROR_DRIVER_NOT_LOADED);
  }
  if (!scenario_load(path)) {
    if (!getenv("MOCK_NVML_QUIET")) fprintf(stderr, "mock-nvml: %s\n", g.lastError);
    return end(NVML_ERROR_UNKNOWN);
  }
  g.lastError[0] = '\0';
  g.initCount = 1;
  return end(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return nvmlInit_v2(); }

EXPORT nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&g.lock);
  if (!g.initCount) return end(NVML_ERROR_UNINITIALIZED);
  if (--g.initCount == 0) {
    memset(g.sets, 0, sizeof g.sets);
    pthread_cond_broadcast(&g.wake); /* waiters see the set gone and return */
  }
  return end(NVML_SUCCESS);
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt request issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "GPU access blocked by the operating system";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED: return "ECC is not supported on vGPU";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED: return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED: return "Deprecated";
    case NVML_ERROR_NOT_READY: return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
    case NVML_ERROR_INVALID_STATE: return "Invalid state";
    default: return "Unknown Error";
  }
}
