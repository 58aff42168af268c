/* One fault object (scenario `faults[i]` or mockNvmlInjectFault) → mock_fault. */
#include <string.h>

#include "fields.h"
#include "mock.h"

static const struct { const char *name; fault_kind kind; } FAULT_KINDS[] = {
  {"xid", F_XID}, {"ecc", F_ECC}, {"rowRemapPending", F_REMAP_PENDING},
  {"rowRemapFailure", F_REMAP_FAILURE}, {"retiredPagesPending", F_RETIRED_PENDING},
  {"gpuLost", F_GPU_LOST}, {"recoveryAction", F_RECOVERY_ACTION}, {"nvlinkDown", F_NVLINK_DOWN},
  {"resetFails", F_RESET_FAILS}, {"pcieLink", F_PCIE_LINK}, {"fabric", F_FABRIC},
  {"sramThresholdExceeded", F_SRAM_THRESHOLD}, {"nvlinkErrors", F_NVLINK_ERRORS},
};

/* One fault object; `atMs` absent means "now" (the injection API uses that). */
int fault_parse(const void *json_fault, mock_fault *f, char *err, size_t err_len) {
  const json_value *o = json_fault;
  err_buf = err;
  err_cap = err_len;
  const char *path = "fault";
  char kind[32] = "";
  double n;
  memset(f, 0, sizeof *f);
  if (!o || o->type != JSON_OBJECT) return bad(path, "expected an object");
  if (!get_str(o, "kind", path, kind, sizeof kind, 1)) return 0;
  size_t k, known = sizeof FAULT_KINDS / sizeof FAULT_KINDS[0];
  for (k = 0; k < known; k++)
    if (strcmp(kind, FAULT_KINDS[k].name) == 0) break;
  if (k == known) return bad("fault.kind", "unknown kind (xid, ecc, rowRemapPending, rowRemapFailure, retiredPagesPending, gpuLost, recoveryAction, nvlinkDown, resetFails, pcieLink, fabric, sramThresholdExceeded, nvlinkErrors)");
  f->kind = FAULT_KINDS[k].kind;
  n = (double)mock_now_ms(); if (!get_num(o, "atMs", path, &n, 0)) return 0; f->atMs = (unsigned long long)n;
  n = 0; if (!get_num(o, "gpu", path, &n, 0)) return 0;
  if (n < 0 || n >= g.gpuCount) return bad("fault.gpu", "no such GPU index");
  f->gpu = (int)n;
  n = 0; if (!get_num(o, "xid", path, &n, f->kind == F_XID)) return 0; f->xid = (unsigned long long)n;
  n = NO_INSTANCE; if (!get_num(o, "gpuInstanceId", path, &n, 0)) return 0; f->gi = (unsigned int)n;
  n = NO_INSTANCE; if (!get_num(o, "computeInstanceId", path, &n, 0)) return 0; f->ci = (unsigned int)n;
  n = 0; if (!get_num(o, "corrected", path, &n, 0)) return 0; f->corrected = (unsigned long long)n;
  n = f->kind == F_ECC && !json_get(o, "corrected") ? 1 : 0;
  if (!get_num(o, "uncorrected", path, &n, 0)) return 0;
  f->uncorrected = (unsigned long long)n;
  if (f->kind == F_PCIE_LINK) {
    /* The link retrains: `width` and/or `gen` (absent: unchanged, stored as 0). */
    n = 0; if (!get_num(o, "width", path, &n, 0)) return 0; f->value = (unsigned int)n;
    n = 0; if (!get_num(o, "gen", path, &n, 0)) return 0; f->value2 = (unsigned int)n;
    if (!f->value && !f->value2) return bad("fault", "pcieLink needs width or gen");
    return 1;
  }
  if (f->kind == F_NVLINK_ERRORS) {
    /* Adds to the NVLink error counters: crcFlit, crcData, replay, recovery (each default 0). */
    static const char *const NAMES[4] = {"crcFlit", "crcData", "replay", "recovery"};
    for (int k = 0; k < 4; k++) {
      n = 0; if (!get_num(o, NAMES[k], path, &n, 0)) return 0; f->linkErrors[k] = (unsigned long long)n;
    }
    return 1;
  }
  if (f->kind == F_FABRIC) {
    /* state 0..3 (not-supported, not-started, in-progress, completed) and the probe's NVML status. */
    n = 3; if (!get_num(o, "state", path, &n, 0)) return 0;
    if (n < 0 || n > 3) return bad("fault.state", "0 not-supported, 1 not-started, 2 in-progress, 3 completed");
    f->value = (unsigned int)n;
    n = 0; if (!get_num(o, "status", path, &n, 0)) return 0; f->value2 = (unsigned int)n;
    return 1;
  }
  n = 0;
  if (!get_num(o, f->kind == F_NVLINK_DOWN ? "link" : "action", path, &n,
               f->kind == F_NVLINK_DOWN || f->kind == F_RECOVERY_ACTION)) return 0;
  f->value = (unsigned int)n;
  return 1;
}
