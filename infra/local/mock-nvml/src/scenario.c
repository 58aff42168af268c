/*
 * Scenario file → model (format: docs/mock-nvml.md). Every error names the field, e.g.
 * "gpus[1].migDevices[0].start: expected a number", and lands in g.lastError; nvmlInit then fails.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "json.h"
#include "mock.h"

static int get_series(const json_value *o, const char *key, const char *path, series_t *out) {
  const json_value *v = json_get(o, key);
  char where[256];
  snprintf(where, sizeof where, "%s.series.%s", path, key);
  if (!v) return 1;
  if (v->type != JSON_ARRAY) return bad(where, "expected an array of numbers");
  out->v = calloc(v->count ? v->count : 1, sizeof(double));
  out->n = v->count;
  for (size_t i = 0; i < v->count; i++) {
    if (v->items[i]->type != JSON_NUMBER) return bad(where, "expected an array of numbers");
    out->v[i] = v->items[i]->number;
  }
  return 1;
}

/* "00000000:3B:00.0" → domain/bus/device, canonical upper-case id and the 16-byte legacy form. */
static int parse_bus_id(mock_gpu *gpu, const char *path) {
  unsigned int domain, bus, dev, fn;
  char where[256];
  snprintf(where, sizeof where, "%s.pciBusId", path);
  if (sscanf(gpu->busId, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4)
    return bad(where, "expected DOMAIN:BUS:DEVICE.FUNCTION like \"00000000:3B:00.0\"");
  gpu->domain = domain;
  gpu->bus = bus;
  gpu->dev = dev;
  snprintf(gpu->busId, sizeof gpu->busId, "%08X:%02X:%02X.%X", domain, bus, dev, fn);
  snprintf(gpu->busIdLegacy, sizeof gpu->busIdLegacy, "%04X:%02X:%02X.%X", domain & 0xffff, bus, dev, fn);
  return 1;
}

static const struct { const char *name; unsigned int bit; } UNSUPPORTED[] = {
  {"utilization", U_UTILIZATION}, {"memory", U_MEMORY}, {"temperature", U_TEMPERATURE},
  {"power", U_POWER}, {"powerLimit", U_POWER_LIMIT}, {"ecc", U_ECC},
  {"retiredPages", U_RETIRED_PAGES}, {"remappedRows", U_REMAPPED_ROWS},
  {"clockEventReasons", U_CLOCK_EVENTS}, {"nvlink", U_NVLINK}, {"processes", U_PROCESSES},
  {"recoveryAction", U_RECOVERY_ACTION}, {"events", U_EVENTS},
};

static int contains_ci(const char *hay, const char *needle) {
  for (; *hay; hay++) {
    size_t i = 0;
    while (needle[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
    if (!needle[i]) return 1;
  }
  return 0;
}

int load_mig(const json_value *m, mock_gpu *gpu, int j, const char *gpath) {
  char path[256];
  snprintf(path, sizeof path, "%s.migDevices[%d]", gpath, j);
  mock_mig *mig = &gpu->migs[j];
  double n;
  mig->magic = MIG_MAGIC;
  mig->parent = gpu->index;
  if (!get_str(m, "profile", path, mig->profile, sizeof mig->profile, 1)) return 0;
  if (!get_str(m, "uuid", path, mig->uuid, sizeof mig->uuid, 1)) return 0;
  n = 0; if (!get_num(m, "giProfileId", path, &n, 1)) return 0; mig->giProfileId = (unsigned int)n;
  n = 0; if (!get_num(m, "start", path, &n, 1)) return 0; mig->start = (unsigned int)n;
  n = 1; if (!get_num(m, "size", path, &n, 1)) return 0; mig->size = (unsigned int)n;
  n = j + 1; if (!get_num(m, "giId", path, &n, 0)) return 0; mig->giId = (unsigned int)n;
  n = 0; if (!get_num(m, "ciId", path, &n, 0)) return 0; mig->ciId = (unsigned int)n;
  n = (double)(gpu->memoryTotalMiB * mig->size / 8); if (!get_num(m, "memoryMiB", path, &n, 0)) return 0;
  mig->memoryMiB = (unsigned long long)n;
  if (mig->start + mig->size > 8) return bad(path, "start + size must be at most 8 memory slices");
  return 1;
}

/*
 * An optional object field: 1 present (its path in `where`), 0 absent, -1 wrong type (error set).
 */
static int sub_object(const json_value *o, const char *key, const char *path, char *where, size_t cap, const json_value **out) {
  *out = json_get(o, key);
  if (!*out) return 0;
  snprintf(where, cap, "%s.%s", path, key);
  if ((*out)->type != JSON_OBJECT) {
    bad(where, "expected an object");
    return -1;
  }
  return 1;
}

/* `count` optional numbers of `obj` named `names` into `out` (absent: 0). */
static int get_nums(const json_value *obj, const char *const *names, int count, const char *where, unsigned long long *out) {
  for (int k = 0; k < count; k++) {
    double n = 0;
    if (!get_num(obj, names[k], where, &n, 0)) return 0;
    out[k] = (unsigned long long)n;
  }
  return 1;
}

/*
 * What a GPU reports beyond the basics, each optional (absent: NOT_SUPPORTED, as drivers answer):
 * temperature limits, PCIe link, fabric, MIG profile sizes and names, NVLink error totals, SRAM.
 */
static int load_hardware(const json_value *o, mock_gpu *gpu, const char *path) {
  char where[96];
  const json_value *v;
  double n;
  unsigned long long nums[4];
  int has;
  if ((has = sub_object(o, "temperatureLimits", path, where, sizeof where, &v)) < 0) return 0;
  if (has) {
    static const char *const LIMITS[4] = {"shutdownC", "slowdownC", "memMaxC", "gpuMaxC"};
    if (!get_nums(v, LIMITS, 4, where, nums)) return 0;
    for (int k = 0; k < 4; k++) gpu->tempLimit[k] = (unsigned int)nums[k];
  }
  if ((has = sub_object(o, "pcieLink", path, where, sizeof where, &v)) < 0) return 0;
  if (has) {
    n = 0; if (!get_num(v, "maxGen", where, &n, 1)) return 0; gpu->pcieMaxGen = (unsigned int)n;
    n = 0; if (!get_num(v, "maxWidth", where, &n, 1)) return 0; gpu->pcieMaxWidth = (unsigned int)n;
    n = gpu->pcieMaxGen; if (!get_num(v, "gen", where, &n, 0)) return 0; gpu->pcieGen = (unsigned int)n;
    n = gpu->pcieMaxWidth; if (!get_num(v, "width", where, &n, 0)) return 0; gpu->pcieWidth = (unsigned int)n;
    gpu->hasPcie = 1;
  }
  if ((has = sub_object(o, "fabric", path, where, sizeof where, &v)) < 0) return 0;
  if (has) {
    n = 3; if (!get_num(v, "state", where, &n, 0)) return 0;
    if (n < 0 || n > 3) return bad(where, "state: 0 not-supported, 1 not-started, 2 in-progress, 3 completed");
    gpu->fabricState = (unsigned int)n;
    n = 0; if (!get_num(v, "status", where, &n, 0)) return 0; gpu->fabricStatus = (unsigned int)n;
    n = 0; if (!get_num(v, "healthMask", where, &n, 0)) return 0; gpu->fabricHealthMask = (unsigned int)n;
  }
  if ((has = sub_object(o, "migProfileMemoryMiB", path, where, sizeof where, &v)) < 0) return 0;
  if (has) {
    static const char *const SLICES[4] = {"1", "2", "4", "8"};
    if (!get_nums(v, SLICES, 4, where, nums)) return 0;
    for (int k = 0; k < 4; k++) gpu->migSliceMemoryMiB[1 << k] = nums[k];
  }
  if ((has = sub_object(o, "migProfileNames", path, where, sizeof where, &v)) < 0) return 0;
  for (size_t k = 0; has && k < v->count; k++) {
    char *end = NULL;
    long id = strtol(v->keys[k], &end, 10);
    if (!end || *end || id < 0 || id >= MAX_PROFILE_IDS) return bad(where, "keys are GPU-instance profile IDs 0..31");
    const json_value *name = v->items[k];
    if (name->type != JSON_STRING || strlen(name->string) >= sizeof gpu->migProfileNames[0]) return bad(where, "values are profile names under 32 characters");
    strcpy(gpu->migProfileNames[id], name->string);
  }
  if ((has = sub_object(o, "nvlinkErrors", path, where, sizeof where, &v)) < 0) return 0;
  if (has) {
    static const char *const NAMES[4] = {"crcFlit", "crcData", "replay", "recovery"};
    if (!get_nums(v, NAMES, 4, where, gpu->linkErrors)) return 0;
    gpu->hasLinkErrors = 1;
  }
  if ((has = sub_object(o, "sram", path, where, sizeof where, &v)) < 0) return 0;
  if (has) {
    int exceeded = 0;
    if (!get_bool(v, "thresholdExceeded", where, &exceeded)) return 0;
    gpu->hasSram = 1;
    gpu->sramThresholdExceeded = (unsigned int)exceeded;
  }
  return 1;
}

static int load_gpu(const json_value *o, int i) {
  char path[64];
  snprintf(path, sizeof path, "gpus[%d]", i);
  if (o->type != JSON_OBJECT) return bad(path, "expected an object");
  mock_gpu *gpu = &g.gpus[i];
  memset(gpu, 0, sizeof *gpu);
  gpu->magic = GPU_MAGIC;
  gpu->index = i;
  double n;
  if (!get_str(o, "name", path, gpu->name, sizeof gpu->name, 1)) return 0;
  if (!get_str(o, "uuid", path, gpu->uuid, sizeof gpu->uuid, 1)) return 0;
  if (!get_str(o, "pciBusId", path, gpu->busId, sizeof gpu->busId, 1) || !parse_bus_id(gpu, path)) return 0;
  gpu->pciDeviceId = 0x000010DE;
  if (!get_hex(o, "pciDeviceId", path, &gpu->pciDeviceId)) return 0;
  if (!get_hex(o, "pciSubSystemId", path, &gpu->pciSubSystemId)) return 0;
  n = 0; if (!get_num(o, "memoryTotalMiB", path, &n, 1)) return 0; gpu->memoryTotalMiB = (unsigned long long)n;
  n = 300; if (!get_num(o, "powerLimitW", path, &n, 0)) return 0; gpu->powerLimitW = (unsigned int)n;
  n = 0; if (!get_num(o, "computeMode", path, &n, 0)) return 0; gpu->computeMode = (unsigned int)n;
  gpu->migCapable = contains_ci(gpu->name, "A100") || contains_ci(gpu->name, "H100") ||
                    contains_ci(gpu->name, "H200") || contains_ci(gpu->name, "B200");
  if (!get_bool(o, "migCapable", path, &gpu->migCapable)) return 0;
  char scope[16] = "gpu";
  if (!get_str(o, "resetScope", path, scope, sizeof scope, 0)) return 0;
  if (strcmp(scope, "gpu") == 0) gpu->resetScope = 0;
  else if (strcmp(scope, "all") == 0) gpu->resetScope = 1;
  else if (strcmp(scope, "none") == 0) gpu->resetScope = 2;
  else return bad(path, "resetScope: expected gpu, all or none");
  if (!get_bool(o, "migMode", path, &gpu->migMode)) return 0;
  gpu->migPending = gpu->migMode;
  if (!get_bool(o, "migPending", path, &gpu->migPending)) return 0;
  if (gpu->migMode && !gpu->migCapable) return bad(path, "migMode needs a MIG-capable GPU (set migCapable)");
  const json_value *migs = json_get(o, "migDevices");
  if (migs) {
    char where[96];
    snprintf(where, sizeof where, "%s.migDevices", path);
    if (migs->type != JSON_ARRAY) return bad(where, "expected an array");
    if (migs->count > MAX_MIGS) return bad(where, "at most 8 MIG devices");
    if (migs->count && !gpu->migMode) return bad(where, "needs migMode: true");
    for (size_t j = 0; j < migs->count; j++)
      if (!load_mig(migs->items[j], gpu, (int)j, path)) return 0;
    gpu->migCount = (int)migs->count;
  }
  const json_value *uns = json_get(o, "unsupported");
  if (uns) {
    char where[96];
    snprintf(where, sizeof where, "%s.unsupported", path);
    if (uns->type != JSON_ARRAY) return bad(where, "expected an array of names");
    for (size_t j = 0; j < uns->count; j++) {
      size_t k, known = sizeof UNSUPPORTED / sizeof UNSUPPORTED[0];
      if (uns->items[j]->type != JSON_STRING) return bad(where, "expected an array of names");
      for (k = 0; k < known; k++)
        if (strcmp(uns->items[j]->string, UNSUPPORTED[k].name) == 0) break;
      if (k == known) return bad(where, "unknown name (see docs/mock-nvml.md)");
      gpu->unsupported |= UNSUPPORTED[k].bit;
    }
  }
  n = 0; if (!get_num(o, "nvlinkCount", path, &n, 0)) return 0;
  if (n > MAX_LINKS) return bad(path, "nvlinkCount: at most 18");
  gpu->nvlinkCount = (unsigned int)n;
  n = 0; if (!get_num(o, "recoveryAction", path, &n, 0)) return 0; gpu->recoveryAction = (unsigned int)n;
  n = 0; if (!get_num(o, "recoveryActionReturn", path, &n, 0)) return 0; gpu->recoveryActionReturn = (unsigned int)n;
  n = 0; if (!get_num(o, "registerEventsReturn", path, &n, 0)) return 0; gpu->registerEventsReturn = (unsigned int)n;
  n = 0; if (!get_num(o, "clockEventReasons", path, &n, 0)) return 0; gpu->clockEventReasons = (unsigned long long)n;
  n = (double)(EV_SINGLE_BIT_ECC | EV_DOUBLE_BIT_ECC | EV_PSTATE | EV_XID);
  if (!get_num(o, "supportedEvents", path, &n, 0)) return 0;
  gpu->supportedEvents = (unsigned long long)n;
  if (!load_hardware(o, gpu, path)) return 0;
  const json_value *ecc = json_get(o, "ecc");
  if (ecc) {
    char where[96];
    snprintf(where, sizeof where, "%s.ecc", path);
    n = 0; if (!get_num(ecc, "volatileCorrected", where, &n, 0)) return 0; gpu->eccVolatile[0] = (unsigned long long)n;
    n = 0; if (!get_num(ecc, "volatileUncorrected", where, &n, 0)) return 0; gpu->eccVolatile[1] = (unsigned long long)n;
    n = 0; if (!get_num(ecc, "aggregateCorrected", where, &n, 0)) return 0; gpu->eccAggregate[0] = (unsigned long long)n;
    n = 0; if (!get_num(ecc, "aggregateUncorrected", where, &n, 0)) return 0; gpu->eccAggregate[1] = (unsigned long long)n;
  }
  const json_value *series = json_get(o, "series");
  gpu->intervalMs = 1000;
  if (series) {
    char where[96];
    snprintf(where, sizeof where, "%s.series", path);
    n = 1000; if (!get_num(series, "intervalMs", where, &n, 0)) return 0;
    if (n < 1) return bad(where, "intervalMs must be at least 1");
    gpu->intervalMs = (unsigned int)n;
    if (!get_bool(series, "loop", where, &gpu->loop)) return 0;
    if (!get_series(series, "util", path, &gpu->util) || !get_series(series, "memUtil", path, &gpu->memUtil) ||
        !get_series(series, "memUsedMiB", path, &gpu->memUsedMiB) || !get_series(series, "tempC", path, &gpu->tempC) ||
        !get_series(series, "powerW", path, &gpu->powerW) || !get_series(series, "memTempC", path, &gpu->memTempC) ||
        !get_series(series, "encUtil", path, &gpu->encUtil) || !get_series(series, "decUtil", path, &gpu->decUtil) ||
        !get_series(series, "clockEventReasons", path, &gpu->clockEvents))
      return 0;
  }
  const json_value *procs = json_get(o, "processes");
  if (procs) {
    char where[96];
    snprintf(where, sizeof where, "%s.processes", path);
    if (procs->type != JSON_ARRAY || procs->count > MAX_PROCS) return bad(where, "expected an array of at most 64");
    for (size_t j = 0; j < procs->count; j++) {
      char p[128];
      snprintf(p, sizeof p, "%s[%zu]", where, j);
      mock_proc *pr = &gpu->procs[j];
      n = 0; if (!get_num(procs->items[j], "pid", p, &n, 1)) return 0; pr->pid = (unsigned int)n;
      n = 0; if (!get_num(procs->items[j], "usedMiB", p, &n, 1)) return 0; pr->usedMiB = (unsigned long long)n;
      n = NO_INSTANCE; if (!get_num(procs->items[j], "gpuInstanceId", p, &n, 0)) return 0; pr->gi = (unsigned int)n;
      n = NO_INSTANCE; if (!get_num(procs->items[j], "computeInstanceId", p, &n, 0)) return 0; pr->ci = (unsigned int)n;
      n = 0; if (!get_num(procs->items[j], "mps", p, &n, 0)) return 0; pr->mps = n != 0;
    }
    gpu->procCount = (int)procs->count;
  }
  return 1;
}

char *mock_read_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  size_t cap = 65536, len = 0, got;
  char *buf = malloc(cap + 1);
  while (buf && (got = fread(buf + len, 1, cap - len, fp)) > 0) {
    len += got;
    if (len == cap) {
      char *grown = realloc(buf, cap * 2 + 1);
      if (!grown) { free(buf); buf = NULL; break; }
      buf = grown;
      cap *= 2;
    }
  }
  fclose(fp);
  if (buf) buf[len] = '\0';
  return buf;
}

static void free_model(void) {
  for (int i = 0; i < MAX_GPUS; i++) {
    series_t *all[] = {&g.gpus[i].util, &g.gpus[i].memUtil, &g.gpus[i].memUsedMiB, &g.gpus[i].tempC, &g.gpus[i].memTempC, &g.gpus[i].encUtil, &g.gpus[i].decUtil,
                       &g.gpus[i].powerW, &g.gpus[i].clockEvents};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) { free(all[k]->v); all[k]->v = NULL; all[k]->n = 0; }
  }
  memset(g.gpus, 0, sizeof g.gpus);
  memset(g.faults, 0, sizeof g.faults);
  memset(g.sets, 0, sizeof g.sets);
  g.gpuCount = g.faultCount = 0;
}

/* Returns 1 on success; on failure g.lastError says why. */
int scenario_load(const char *path) {
  char local_err[480] = "";
  err_buf = local_err;
  err_cap = sizeof local_err;
  free_model();
  char *text = mock_read_file(path);
  if (!text) {
    snprintf(g.lastError, sizeof g.lastError, "cannot read scenario %s", path);
    return 0;
  }
  char perr[256];
  json_value *root = json_parse(text, perr, sizeof perr);
  free(text);
  int ok = 0;
  if (!root) { snprintf(local_err, sizeof local_err, "invalid JSON: %s", perr); goto done; }
  if (root->type != JSON_OBJECT) { bad("scenario", "expected an object"); goto done; }
  strcpy(g.driverVersion, "550.54.14");
  if (!get_str(root, "driverVersion", "", g.driverVersion, sizeof g.driverVersion, 0)) goto done;
  snprintf(g.nvmlVersion, sizeof g.nvmlVersion, "12.%s", g.driverVersion);
  if (!get_str(root, "nvmlVersion", "", g.nvmlVersion, sizeof g.nvmlVersion, 0)) goto done;
  double n = 12040;
  if (!get_num(root, "cudaVersion", "", &n, 0)) goto done;
  g.cudaVersion = (int)n;
  g.processesFile[0] = '\0';
  g.processesStamp[0] = g.processesStamp[1] = -1;
  if (!get_str(root, "processesFile", "", g.processesFile, sizeof g.processesFile, 0)) goto done;
  g.controlDir[0] = '\0';
  g.controlStamp = -1;
  if (!get_str(root, "controlDir", "", g.controlDir, sizeof g.controlDir, 0)) goto done;
  g.clientsFile[0] = '\0';
  if (!get_str(root, "clientsFile", "", g.clientsFile, sizeof g.clientsFile, 0)) goto done;
  g.migFile[0] = '\0';
  g.migStamp[0] = g.migStamp[1] = -1;
  if (!get_str(root, "migFile", "", g.migFile, sizeof g.migFile, 0)) goto done;
  const json_value *gpus = json_get(root, "gpus");
  if (!gpus || gpus->type != JSON_ARRAY) { bad("gpus", "expected an array"); goto done; }
  if (gpus->count > MAX_GPUS) { bad("gpus", "at most 16 GPUs"); goto done; }
  g.gpuCount = (int)gpus->count;
  for (size_t i = 0; i < gpus->count; i++)
    if (!load_gpu(gpus->items[i], (int)i)) goto done;
  const json_value *faults = json_get(root, "faults");
  if (faults) {
    if (faults->type != JSON_ARRAY || faults->count > MAX_FAULTS) { bad("faults", "expected an array of at most 256"); goto done; }
    for (size_t i = 0; i < faults->count; i++) {
      char ferr[400];
      if (!json_get(faults->items[i], "atMs")) { snprintf(local_err, sizeof local_err, "faults[%zu].atMs: is required", i); goto done; }
      int parsed = fault_parse(faults->items[i], &g.faults[i], ferr, sizeof ferr);
      err_buf = local_err;
      err_cap = sizeof local_err;
      if (!parsed) {
        snprintf(local_err, sizeof local_err, "faults[%zu]: %s", i, ferr);
        goto done;
      }
    }
    g.faultCount = (int)faults->count;
  }
  ok = 1;
done:
  json_free(root);
  if (!ok) {
    snprintf(g.lastError, sizeof g.lastError, "scenario %s: %s", path, local_err);
    free_model();
  }
  return ok;
}
