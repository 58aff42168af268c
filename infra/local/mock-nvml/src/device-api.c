/*
 * The exported NVML device and system functions. Each call locks the model, fires due faults, then
 * answers like the real library: the same return codes for bad handles, short buffers, features a
 * GPU lacks (NOT_SUPPORTED) and GPUs that fell off the bus (GPU_IS_LOST).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api.h"

/* ---- system ----------------------------------------------------------------------------------- */

static nvmlReturn_t copy_string(char *out, unsigned int length, const char *value) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(out, value);
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  BEGIN();
  return end(copy_string(version, length, g.driverVersion));
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
  BEGIN();
  return end(copy_string(version, length, g.nvmlVersion));
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
  BEGIN();
  if (!cudaDriverVersion) return end(NVML_ERROR_INVALID_ARGUMENT);
  *cudaDriverVersion = g.cudaVersion;
  return end(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { return nvmlSystemGetCudaDriverVersion_v2(v); }

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
  BEGIN();
  if (!deviceCount) return end(NVML_ERROR_INVALID_ARGUMENT);
  *deviceCount = (unsigned int)g.gpuCount;
  return end(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *n) { return nvmlDeviceGetCount_v2(n); }

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  BEGIN();
  if (!device || index >= (unsigned int)g.gpuCount) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (g.gpus[index].lost) return end(NVML_ERROR_GPU_IS_LOST);
  *device = &g.gpus[index];
  return end(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d) { return nvmlDeviceGetHandleByIndex_v2(i, d); }

/* ---- identity --------------------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
  BEGIN_DEVICE(device);
  if (mig) {
    char full[160];
    snprintf(full, sizeof full, "%s MIG %s", gpu->name, mig->profile);
    return end(copy_string(name, length, full));
  }
  return end(copy_string(name, length, gpu->name));
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
  BEGIN_DEVICE(device);
  return end(copy_string(uuid, length, mig ? mig->uuid : gpu->uuid));
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  BEGIN_DEVICE(device);
  if (!pci) return end(NVML_ERROR_INVALID_ARGUMENT);
  memset(pci, 0, sizeof *pci);
  strcpy(pci->busIdLegacy, gpu->busIdLegacy);
  strcpy(pci->busId, gpu->busId);
  pci->domain = gpu->domain;
  pci->bus = gpu->bus;
  pci->device = gpu->dev;
  pci->pciDeviceId = gpu->pciDeviceId;
  pci->pciSubSystemId = gpu->pciSubSystemId;
  return end(NVML_SUCCESS);
}

/* ---- telemetry -------------------------------------------------------------------------------- */

static double series_at(const series_t *s, const mock_gpu *gpu, double fallback) {
  if (!s->n) return fallback;
  unsigned long long i = mock_now_ms() / gpu->intervalMs;
  if (i >= s->n) i = gpu->loop ? i % s->n : s->n - 1;
  return s->v[i];
}

static unsigned long long used_mib(const mock_gpu *gpu) {
  unsigned long long sum = 0;
  for (int i = 0; i < gpu->procCount; i++) sum += gpu->procs[i].usedMiB;
  return (unsigned long long)series_at(&gpu->memUsedMiB, gpu, (double)sum);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  BEGIN_DEVICE(device);
  if (!memory) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (gpu->unsupported & U_MEMORY) return end(NVML_ERROR_NOT_SUPPORTED);
  unsigned long long total = (mig ? mig->memoryMiB : gpu->memoryTotalMiB) << 20;
  unsigned long long used = 0;
  if (mig) {
    for (int i = 0; i < gpu->procCount; i++)
      if (gpu->procs[i].gi == mig->giId) used += gpu->procs[i].usedMiB << 20;
  } else {
    used = used_mib(gpu) << 20;
  }
  if (used > total) used = total;
  memory->total = total;
  memory->used = used;
  memory->free = total - used;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
  BEGIN_DEVICE(device);
  if (!utilization) return end(NVML_ERROR_INVALID_ARGUMENT);
  /* Real NVML: utilization is not available per GPU (nor per MIG device) while MIG is on. */
  if ((gpu->unsupported & U_UTILIZATION) || gpu->migMode || mig) return end(NVML_ERROR_NOT_SUPPORTED);
  utilization->gpu = (unsigned int)series_at(&gpu->util, gpu, 0);
  utilization->memory = (unsigned int)series_at(&gpu->memUtil, gpu, 0);
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int *temp) {
  BEGIN_GPU(device);
  if (!temp || sensorType != 0) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (gpu->unsupported & U_TEMPERATURE) return end(NVML_ERROR_NOT_SUPPORTED);
  *temp = (unsigned int)series_at(&gpu->tempC, gpu, 35);
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power) {
  BEGIN_GPU(device);
  if (!power) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (gpu->unsupported & U_POWER) return end(NVML_ERROR_NOT_SUPPORTED);
  *power = (unsigned int)(series_at(&gpu->powerW, gpu, gpu->powerLimitW * 0.15) * 1000.0); /* milliwatts */
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit) {
  BEGIN_GPU(device);
  if (!limit) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (gpu->unsupported & U_POWER_LIMIT) return end(NVML_ERROR_NOT_SUPPORTED);
  *limit = gpu->powerLimitW * 1000;
  return end(NVML_SUCCESS);
}

/* The compute mode: NVIDIA's MPS control daemon sets EXCLUSIVE_PROCESS (3) on the GPUs it serves
 * (k8s-device-plugin cmd/mps-control-daemon/mps/daemon.go setComputeMode; nvml.h nvmlComputeMode_t). */
EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, unsigned int *mode) {
  BEGIN_GPU(device);
  if (!mode) return end(NVML_ERROR_INVALID_ARGUMENT);
  *mode = gpu->computeMode;
  return end(NVML_SUCCESS);
}

static nvmlReturn_t clock_reasons(nvmlDevice_t device, unsigned long long *reasons) {
  BEGIN_GPU(device);
  if (!reasons) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (gpu->unsupported & U_CLOCK_EVENTS) return end(NVML_ERROR_NOT_SUPPORTED);
  *reasons = (unsigned long long)series_at(&gpu->clockEvents, gpu, (double)gpu->clockEventReasons);
  return end(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r) { return clock_reasons(d, r); }
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r) { return clock_reasons(d, r); }

/* ---- memory health ---------------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType, unsigned long long *count) {
  BEGIN_GPU(device);
  if (!count || errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (gpu->unsupported & U_ECC) return end(NVML_ERROR_NOT_SUPPORTED);
  *count = counterType == 0 ? gpu->eccVolatile[errorType] : gpu->eccAggregate[errorType];
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, int *isPending) {
  BEGIN_GPU(device);
  if (!isPending) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (gpu->unsupported & U_RETIRED_PAGES) return end(NVML_ERROR_NOT_SUPPORTED);
  *isPending = gpu->retiredPagesPending;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                              unsigned int *isPending, unsigned int *failureOccurred) {
  BEGIN_GPU(device);
  if (!corrRows || !uncRows || !isPending || !failureOccurred) return end(NVML_ERROR_INVALID_ARGUMENT);
  /* Row remapping cannot be read while MIG is enabled (docs/xid-catalog.md). */
  if ((gpu->unsupported & U_REMAPPED_ROWS) || gpu->migMode) return end(NVML_ERROR_NOT_SUPPORTED);
  *corrRows = gpu->remapCorrectable;
  *uncRows = gpu->remapUncorrectable;
  *isPending = gpu->remapPending;
  *failureOccurred = gpu->remapFailure;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive) {
  BEGIN_GPU(device);
  if (!isActive) return end(NVML_ERROR_INVALID_ARGUMENT);
  if ((gpu->unsupported & U_NVLINK) || gpu->nvlinkCount == 0) return end(NVML_ERROR_NOT_SUPPORTED);
  if (link >= gpu->nvlinkCount) return end(NVML_ERROR_INVALID_ARGUMENT);
  *isActive = !gpu->linkDown[link];
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values) {
  BEGIN_GPU(device);
  if (!values || valuesCount < 0) return end(NVML_ERROR_INVALID_ARGUMENT);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  for (int i = 0; i < valuesCount; i++) {
    nvmlFieldValue_t *v = &values[i];
    v->timestamp = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    v->latencyUsec = 0;
    v->value.ullVal = 0;
    if (v->fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION && gpu->recoveryActionReturn) {
      v->nvmlReturn = (nvmlReturn_t)gpu->recoveryActionReturn;
    } else if (v->fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION && !(gpu->unsupported & U_RECOVERY_ACTION)) {
      v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      v->value.uiVal = gpu->recoveryAction;
      v->nvmlReturn = NVML_SUCCESS;
    } else if (v->fieldId == NVML_FI_DEV_MEMORY_TEMP && gpu->memTempC.n) {
      v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      v->value.uiVal = (unsigned int)series_at(&gpu->memTempC, gpu, 0);
      v->nvmlReturn = NVML_SUCCESS;
    } else if (gpu->hasLinkErrors && (v->fieldId == 38 || v->fieldId == 45 || v->fieldId == 52 || v->fieldId == 59)) {
      /* NVML_FI_DEV_NVLINK_{CRC_FLIT,CRC_DATA,REPLAY,RECOVERY}_ERROR_COUNT_TOTAL */
      int k = v->fieldId == 38 ? 0 : v->fieldId == 45 ? 1 : v->fieldId == 52 ? 2 : 3;
      v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
      v->value.ullVal = gpu->linkErrors[k];
      v->nvmlReturn = NVML_SUCCESS;
    } else {
      v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED; /* the mock knows fields 38/45/52/59, 82 and 230 */
    }
  }
  return end(NVML_SUCCESS);
}

static nvmlReturn_t codec_util(nvmlDevice_t device, unsigned int *util, unsigned int *period, int decoder) {
  BEGIN_GPU(device);
  if (!util || !period) return end(NVML_ERROR_INVALID_ARGUMENT);
  const series_t *s = decoder ? &gpu->decUtil : &gpu->encUtil;
  if (!s->n) return end(NVML_ERROR_NOT_SUPPORTED);
  *util = (unsigned int)series_at(s, gpu, 0);
  *period = 100000; /* the sampling window; the agent does not use it */
  return end(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t d, unsigned int *u, unsigned int *p) { return codec_util(d, u, p, 0); }
EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t d, unsigned int *u, unsigned int *p) { return codec_util(d, u, p, 1); }

/* ---- limits, PCIe, fabric, SRAM (real-driver shapes: docs/node-agent.md "Read on a real driver") ---- */

EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, int thresholdType, unsigned int *temp) {
  BEGIN_GPU(device);
  if (!temp || thresholdType < 0) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (thresholdType > 3 || !gpu->tempLimit[thresholdType]) return end(NVML_ERROR_NOT_SUPPORTED);
  *temp = gpu->tempLimit[thresholdType];
  return end(NVML_SUCCESS);
}

static nvmlReturn_t pcie_value(nvmlDevice_t device, unsigned int *out, int which) {
  BEGIN_GPU(device);
  if (!out) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (!gpu->hasPcie) return end(NVML_ERROR_NOT_SUPPORTED);
  *out = which == 0 ? gpu->pcieGen : which == 1 ? gpu->pcieMaxGen : which == 2 ? gpu->pcieWidth : gpu->pcieMaxWidth;
  return end(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return pcie_value(d, v, 0); }
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return pcie_value(d, v, 1); }
EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v) { return pcie_value(d, v, 2); }
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v) { return pcie_value(d, v, 3); }

EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t *info) {
  BEGIN_GPU(device);
  if (!info) return end(NVML_ERROR_INVALID_ARGUMENT);
  unsigned int size = info->version & 0xFFFFFFu, version = info->version >> 24;
  if (!((version == 3 && size == sizeof *info) || (version == 2 && size == 36))) return end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  /* Like the real driver on a GPU with no NVSwitch: SUCCESS, state NOT_SUPPORTED, the rest zero. */
  memset(info->clusterUuid, 0, sizeof info->clusterUuid);
  info->state = (unsigned char)gpu->fabricState;
  info->status = gpu->fabricState == 3 ? (nvmlReturn_t)gpu->fabricStatus : NVML_SUCCESS;
  info->cliqueId = 0;
  info->healthMask = gpu->fabricHealthMask;
  if (version == 3) info->healthSummary = 0;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetSramEccErrorStatus(nvmlDevice_t device, nvmlEccSramErrorStatus_t *status) {
  BEGIN_GPU(device);
  if (!status) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (status->version != (sizeof *status | 1u << 24)) return end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  if (!gpu->hasSram) return end(NVML_ERROR_NOT_SUPPORTED);
  unsigned int version = status->version;
  memset(status, 0, sizeof *status);
  status->version = version;
  status->bThresholdExceeded = gpu->sramThresholdExceeded;
  return end(NVML_SUCCESS);
}

/* ---- processes -------------------------------------------------------------------------------- */

/*
 * Compute processes and MPS clients, apart as the driver lists them: the compute listing shows every
 * process with a compute context except MPS clients (so under MPS the server), the MPS listing only the
 * clients (NVIDIA/go-nvml pkg/nvml/nvml.h, nvmlDeviceGetMPSComputeRunningProcesses_v3; reference
 * sharing.md §2: a server pid alone names no pod, dcgm-exporter#734).
 */
static nvmlReturn_t list_processes(nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos, unsigned int mps) {
  BEGIN_DEVICE(device);
  if (!infoCount) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (gpu->unsupported & U_PROCESSES) return end(NVML_ERROR_NOT_SUPPORTED);
  unsigned int n = 0;
  for (int i = 0; i < gpu->procCount; i++)
    if (gpu->procs[i].mps == mps && (!mig || (gpu->procs[i].gi == mig->giId && gpu->procs[i].ci == mig->ciId))) n++;
  if (*infoCount < n || (n && !infos)) {
    *infoCount = n;
    return end(NVML_ERROR_INSUFFICIENT_SIZE);
  }
  unsigned int k = 0;
  for (int i = 0; i < gpu->procCount; i++) {
    const mock_proc *p = &gpu->procs[i];
    if (p->mps != mps || (mig && (p->gi != mig->giId || p->ci != mig->ciId))) continue;
    infos[k].pid = p->pid;
    infos[k].usedGpuMemory = p->usedMiB << 20;
    infos[k].gpuInstanceId = p->gi;
    infos[k].computeInstanceId = p->ci;
    k++;
  }
  *infoCount = n;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos) {
  return list_processes(device, infoCount, infos, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos) {
  return list_processes(device, infoCount, infos, 1);
}
