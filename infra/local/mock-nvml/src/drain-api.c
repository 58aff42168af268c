/*
 * NVML drain state, what `nvidia-smi drain -p <pci> -m 1|0` drives: the GPU is named by its PCI
 * bus id (the pciInfo's busId, or busIdLegacy), not by a handle. Turning it on is refused with
 * NVML_ERROR_IN_USE while processes hold the GPU (the real call needs the GPU idle, and root);
 * a GPU NVML does not list is NVML_ERROR_NOT_FOUND. A reset leaves the drain state as it was.
 */
#include <stdio.h>
#include <strings.h>

#include "api.h"
#include "mock.h"

/* The index of the GPU at this PCI address, or -1 (callers hold g.lock). */
static int gpu_at(const nvmlPciInfo_t *pci) {
  for (int i = 0; i < g.gpuCount; i++) {
    const mock_gpu *gpu = &g.gpus[i];
    if ((pci->busId[0] && strcasecmp(pci->busId, gpu->busId) == 0) || (pci->busIdLegacy[0] && strcasecmp(pci->busIdLegacy, gpu->busIdLegacy) == 0)) return i;
  }
  return -1;
}

EXPORT nvmlReturn_t nvmlDeviceQueryDrainState(nvmlPciInfo_t *pci, int *state) {
  BEGIN();
  if (!pci || !state) return end(NVML_ERROR_INVALID_ARGUMENT);
  int i = gpu_at(pci);
  if (i < 0) return end(NVML_ERROR_NOT_FOUND);
  *state = g.gpus[i].drained ? 1 : 0;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceModifyDrainState(nvmlPciInfo_t *pci, int newState) {
  BEGIN();
  if (!pci || (newState != 0 && newState != 1)) return end(NVML_ERROR_INVALID_ARGUMENT);
  int i = gpu_at(pci);
  if (i < 0) return end(NVML_ERROR_NOT_FOUND);
  mock_gpu *gpu = &g.gpus[i];
  if (newState == 1 && !gpu->drained && gpu->procCount > 0) {
    snprintf(g.lastError, sizeof g.lastError, "GPU %d is in use by %d process(es): it cannot be drained", i, gpu->procCount);
    return end(NVML_ERROR_IN_USE);
  }
  gpu->drained = newState;
  return end(NVML_SUCCESS);
}
