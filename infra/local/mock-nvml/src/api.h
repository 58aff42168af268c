/* Shared by the exported-function files: locking, handle checks, visibility. */
#ifndef MOCK_NVML_API_H
#define MOCK_NVML_API_H

#include "mock.h"

#define EXPORT __attribute__((visibility("default")))

/* Locks and fires due faults; unlocks and returns UNINITIALIZED before nvmlInit. */
nvmlReturn_t begin(void);
/* Unlocks and passes rc through. */
nvmlReturn_t end(nvmlReturn_t rc);
/* Resolves a GPU or MIG handle (mig NULL for a GPU); INVALID_ARGUMENT or GPU_IS_LOST. */
nvmlReturn_t resolve(const void *handle, mock_gpu **gpu, mock_mig **mig);

#define BEGIN() do { nvmlReturn_t rc_ = begin(); if (rc_) return rc_; } while (0)
#define BEGIN_DEVICE(handle) \
  mock_gpu *gpu; mock_mig *mig; \
  do { nvmlReturn_t rc_ = begin(); if (rc_) return rc_; \
       rc_ = resolve(handle, &gpu, &mig); if (rc_) return end(rc_); } while (0)
/* Whole-GPU queries: a MIG handle is NOT_SUPPORTED there, as in real NVML. */
#define BEGIN_GPU(handle) \
  BEGIN_DEVICE(handle); \
  do { if (mig) return end(NVML_ERROR_NOT_SUPPORTED); } while (0)

#endif
