/*
 * MIG: mode, MIG device handles, GPU instance profiles and placements. The profile table is the
 * 8-memory-slice geometry shared by A100, H100, H200 and B200 (docs/mig.md); profile
 * names and memory sizes are derived from the GPU's memory, SM counts from its family.
 */
#include <stdio.h>
#include <string.h>

#include "api.h"

typedef struct {
  unsigned int profile;      /* NVML_GPU_INSTANCE_PROFILE_* index passed by the caller */
  unsigned int id;           /* the GI profile ID NVML reports (19, 14, 9, ...) */
  unsigned int compute;      /* compute slices (the "g" number) */
  unsigned int memSlices;    /* memory slices, out of 8 */
  unsigned int max;          /* instances per GPU */
  unsigned int step;         /* allowed starts: 0, step, 2*step ... while start+memSlices <= limit */
  unsigned int startLimit;   /* last memory slice + 1 a start may use */
  unsigned int smA100, smH100;
  const char *suffix;
} gi_profile;

static const gi_profile PROFILES[] = {
  {0, 19, 1, 1, 7, 1, 7, 14, 16, ""},     /* 1g */
  {1, 14, 2, 2, 3, 2, 6, 28, 32, ""},     /* 2g */
  {2, 9, 3, 4, 2, 4, 8, 42, 60, ""},      /* 3g */
  {3, 5, 4, 4, 1, 4, 4, 56, 64, ""},      /* 4g */
  {4, 0, 7, 8, 1, 8, 8, 98, 132, ""},     /* 7g */
  {7, 20, 1, 1, 1, 1, 7, 14, 16, "+me"},  /* 1g +me (REV1) */
  {9, 15, 1, 2, 4, 2, 8, 14, 26, ""},     /* 1g double memory (REV2) */
};
#define PROFILE_COUNT_MAX 17 /* NVML_GPU_INSTANCE_PROFILE_COUNT in current headers */

static const gi_profile *by_index(unsigned int profile) {
  for (size_t i = 0; i < sizeof PROFILES / sizeof PROFILES[0]; i++)
    if (PROFILES[i].profile == profile) return &PROFILES[i];
  return NULL;
}

static const gi_profile *by_id(unsigned int id) {
  for (size_t i = 0; i < sizeof PROFILES / sizeof PROFILES[0]; i++)
    if (PROFILES[i].id == id) return &PROFILES[i];
  return NULL;
}

static int hopper(const mock_gpu *gpu) { return strstr(gpu->name, "H100") || strstr(gpu->name, "H200") || strstr(gpu->name, "B200"); }

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode) {
  BEGIN_GPU(device);
  if (!currentMode || !pendingMode) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (!gpu->migCapable) return end(NVML_ERROR_NOT_SUPPORTED);
  *currentMode = (unsigned int)gpu->migMode;
  *pendingMode = (unsigned int)gpu->migPending;
  return end(NVML_SUCCESS);
}

/* "Returns zero if MIG is not supported or enabled." */
EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
  BEGIN_GPU(device);
  if (!count) return end(NVML_ERROR_INVALID_ARGUMENT);
  *count = gpu->migCapable && gpu->migMode ? 7 : 0;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice) {
  BEGIN_GPU(device);
  if (!migDevice || !gpu->migMode || index >= 7) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (index >= (unsigned int)gpu->migCount) return end(NVML_ERROR_NOT_FOUND);
  *migDevice = (nvmlDevice_t)(void *)&gpu->migs[index];
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device) {
  BEGIN_DEVICE(migDevice);
  if (!device || !mig) return end(NVML_ERROR_INVALID_ARGUMENT);
  *device = gpu;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice) {
  BEGIN_DEVICE(device);
  if (!isMigDevice) return end(NVML_ERROR_INVALID_ARGUMENT);
  *isMigDevice = mig != NULL;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
  BEGIN_DEVICE(device);
  if (!id) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (!mig) return end(NVML_ERROR_NOT_SUPPORTED);
  *id = mig->giId;
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
  BEGIN_DEVICE(device);
  if (!id) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (!mig) return end(NVML_ERROR_NOT_SUPPORTED);
  *id = mig->ciId;
  return end(NVML_SUCCESS);
}

static void fill_profile(const mock_gpu *gpu, const gi_profile *p, nvmlGpuInstanceProfileInfo_t *info) {
  memset(info, 0, sizeof *info);
  info->id = p->id;
  info->isP2pSupported = 0;
  info->sliceCount = p->compute;
  info->instanceCount = p->max;
  info->multiprocessorCount = hopper(gpu) ? p->smH100 : p->smA100;
  info->copyEngineCount = p->compute;
  info->decoderCount = p->compute == 7 ? 5 : p->compute / 2;
  info->encoderCount = 0;
  info->jpegCount = p->compute == 7 ? 1 : 0;
  info->ofaCount = p->compute == 7 || p->suffix[0] ? 1 : 0;
  /* Memory is whole slices rounded down, or what a real driver reported (`migProfileMemoryMiB`). */
  unsigned long long real = p->memSlices <= 8 ? gpu->migSliceMemoryMiB[p->memSlices] : 0;
  info->memorySizeMB = real ? real : (gpu->memoryTotalMiB * p->memSlices / 8) / 256 * 256;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t *info) {
  BEGIN_GPU(device);
  if (!info || profile >= PROFILE_COUNT_MAX) return end(NVML_ERROR_INVALID_ARGUMENT);
  const gi_profile *p = by_index(profile);
  if (!gpu->migCapable || !p) return end(NVML_ERROR_NOT_SUPPORTED);
  fill_profile(gpu, p, info);
  return end(NVML_SUCCESS);
}

/*
 * The versioned call that also names the profile (v2: 152 bytes). Real drivers answer names like
 * "MIG 1g.18gb"; the mock knows a name only where the scenario gives one (`migProfileNames`, by
 * profile ID) and answers NOT_SUPPORTED otherwise, as a driver without the call would leave the
 * agent to its own rule.
 */
EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t *info) {
  BEGIN_GPU(device);
  if (!info || profile >= PROFILE_COUNT_MAX) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (info->version != (sizeof *info | 2u << 24)) return end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  const gi_profile *p = by_index(profile);
  if (!gpu->migCapable || !p || p->id >= MAX_PROFILE_IDS || !gpu->migProfileNames[p->id][0]) return end(NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuInstanceProfileInfo_t base;
  fill_profile(gpu, p, &base);
  unsigned int version = info->version;
  memset(info, 0, sizeof *info);
  info->version = version;
  info->id = base.id; info->isP2pSupported = base.isP2pSupported; info->sliceCount = base.sliceCount;
  info->instanceCount = base.instanceCount; info->multiprocessorCount = base.multiprocessorCount;
  info->copyEngineCount = base.copyEngineCount; info->decoderCount = base.decoderCount;
  info->encoderCount = base.encoderCount; info->jpegCount = base.jpegCount; info->ofaCount = base.ofaCount;
  info->memorySizeMB = base.memorySizeMB;
  snprintf(info->name, sizeof info->name, "MIG %s", gpu->migProfileNames[p->id]);
  return end(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                                  nvmlGpuInstancePlacement_t *placements, unsigned int *count) {
  BEGIN_GPU(device);
  if (!count) return end(NVML_ERROR_INVALID_ARGUMENT);
  const gi_profile *p = by_id(profileId);
  if (!gpu->migCapable) return end(NVML_ERROR_NOT_SUPPORTED);
  if (!p) return end(NVML_ERROR_INVALID_ARGUMENT);
  unsigned int n = 0;
  for (unsigned int s = 0; s < p->startLimit && s + p->memSlices <= 8; s += p->step) n++;
  if (placements && *count < n) { *count = n; return end(NVML_ERROR_INSUFFICIENT_SIZE); }
  if (placements)
    for (unsigned int i = 0; i < n; i++) { placements[i].start = i * p->step; placements[i].size = p->memSlices; }
  *count = n;
  return end(NVML_SUCCESS);
}

/* The GPU instance behind a MIG device; the handle is the MIG device itself. */
EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance) {
  BEGIN_GPU(device);
  if (!gpuInstance) return end(NVML_ERROR_INVALID_ARGUMENT);
  if (!gpu->migMode) return end(NVML_ERROR_INVALID_STATE);
  for (int i = 0; i < gpu->migCount; i++)
    if (gpu->migs[i].giId == id) { *gpuInstance = &gpu->migs[i]; return end(NVML_SUCCESS); }
  return end(NVML_ERROR_NOT_FOUND);
}

EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info) {
  BEGIN_DEVICE(gpuInstance);
  if (!info || !mig) return end(NVML_ERROR_INVALID_ARGUMENT);
  info->device = gpu;
  info->id = mig->giId;
  info->profileId = mig->giProfileId;
  info->placement.start = mig->start;
  info->placement.size = mig->size;
  return end(NVML_SUCCESS);
}
