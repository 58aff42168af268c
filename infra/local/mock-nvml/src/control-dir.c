/*
 * Requests from other processes (the mock `nvidia-smi` of the local stack): a scenario may name
 * `controlDir`. A client writes `<id>.req` there (atomically: write elsewhere, rename in) holding
 * `reset <GPU UUID>`; the next API call of the process that loaded the library (every agent calls
 * NVML all the time) carries it out as mockNvmlResetGpu would, writes `<id>.res` (atomically)
 * holding `<NVML return code> <words>`, and removes the request. The directory's mtime moves on
 * every rename into it, so a call with nothing new costs one stat.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "mock.h"

/*
 * How many other clients hold the GPUs open (scenario `clientsFile`: the GPU Operator's device plugin,
 * DCGM, its exporter, GFD — processes NVML does not list as compute processes); the first named in
 * `first`. A missing or unreadable file: none.
 */
static int other_clients(char *first, size_t len) {
  first[0] = '\0';
  if (!g.clientsFile[0]) return 0;
  char *text = mock_read_file(g.clientsFile);
  if (!text) return 0;
  char err[64];
  json_value *root = json_parse(text, err, sizeof err);
  free(text);
  if (!root) return 0;
  const json_value *h = root->type == JSON_OBJECT ? json_get(root, "holders") : NULL;
  int n = h && h->type == JSON_ARRAY ? (int)h->count : 0;
  if (n > 0 && h->items[0]->type == JSON_STRING) snprintf(first, len, "%s", h->items[0]->string);
  json_free(root);
  return n;
}

/* Resets GPU `index` (callers hold g.lock): the rules of mockNvmlResetGpu. */
nvmlReturn_t reset_gpu(unsigned int index) {
  if (index >= (unsigned int)g.gpuCount) return NVML_ERROR_INVALID_ARGUMENT;
  mock_gpu *gpu = &g.gpus[index];
  /* Boards where NVIDIA does not reset one GPU alone (infra/local/gpu-reset-scope.ts names the source):
   * NVML_ERROR_NOT_SUPPORTED, before anything else is looked at. */
  if (gpu->resetScope != 0) {
    snprintf(g.lastError, sizeof g.lastError, "%s",
             gpu->resetScope == 1 ? "a single GPU cannot be reset here: reset every NVLink-connected GPU together"
                                  : "a single GPU cannot be reset on this NVSwitch system (Fabric Manager)");
    return NVML_ERROR_NOT_SUPPORTED;
  }
  if (gpu->procCount > 0) {
    snprintf(g.lastError, sizeof g.lastError, "GPU %u is in use by %d process(es)", index, gpu->procCount);
    return NVML_ERROR_IN_USE;
  }
  /* nvidia-smi(1) -r: no client may hold the GPU, monitoring ones included (DCGM, the device plugin). */
  char first[256];
  int clients = other_clients(first, sizeof first);
  if (clients > 0) {
    snprintf(g.lastError, sizeof g.lastError, "GPU %u is in use by another client (%d: %s, …)", index, clients, first);
    return NVML_ERROR_IN_USE;
  }
  if (gpu->resetFails) {
    snprintf(g.lastError, sizeof g.lastError, "GPU %u did not come back from its reset", index);
    return NVML_ERROR_UNKNOWN;
  }
  gpu->eccVolatile[0] = gpu->eccVolatile[1] = 0;
  if (gpu->remapPending) gpu->remapPending = 0;
  gpu->retiredPagesPending = 0;
  gpu->recoveryAction = 0;
  for (int l = 0; l < MAX_LINKS; l++) gpu->linkDown[l] = 0;
  memset(gpu->linkErrors, 0, sizeof gpu->linkErrors); /* NVLink error counters are volatile */
  gpu->lost = 0;
  /* A reset destroys every GPU and compute instance; MIG mode stays on. The instances return only
   * when mig-manager creates them again (the migFile rewritten, even with the same layout). */
  gpu->migCount = 0;
  gpu->resets++;
  g.lastError[0] = 0;
  return NVML_SUCCESS;
}

static void answer(const char *dir, const char *id, int rc, const char *words) {
  char tmp[1400], res[1400];
  snprintf(tmp, sizeof tmp, "%s/.%s.res.tmp", dir, id);
  snprintf(res, sizeof res, "%s/%s.res", dir, id);
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f, "%d %s\n", rc, words);
  fclose(f);
  rename(tmp, res);
}

static void handle(const char *dir, const char *name) {
  char path[1400], id[256];
  size_t len = strlen(name);
  if (len < 5 || len - 4 >= sizeof id) return;
  memcpy(id, name, len - 4);
  id[len - 4] = '\0';
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *text = mock_read_file(path);
  unlink(path);
  if (!text) return;
  char verb[32] = "", uuid[128] = "";
  int n = sscanf(text, "%31s %127s", verb, uuid);
  free(text);
  if (n != 2 || strcmp(verb, "reset") != 0) {
    answer(dir, id, NVML_ERROR_INVALID_ARGUMENT, "expected: reset <GPU UUID>");
    return;
  }
  for (int i = 0; i < g.gpuCount; i++) {
    if (strcmp(g.gpus[i].uuid, uuid) != 0) continue;
    char saved[512];
    snprintf(saved, sizeof saved, "%s", g.lastError);
    nvmlReturn_t rc = reset_gpu((unsigned int)i);
    char words[600];
    snprintf(words, sizeof words, "%s", rc == NVML_SUCCESS ? "reset" : g.lastError);
    /* A client's failure is its own answer, not this process's last error. */
    snprintf(g.lastError, sizeof g.lastError, "%s", saved);
    answer(dir, id, rc, words);
    return;
  }
  answer(dir, id, NVML_ERROR_NOT_FOUND, "no GPU with this UUID");
}

void refresh_control_dir(void) {
  if (!g.controlDir[0]) return;
  struct stat st;
  if (stat(g.controlDir, &st) != 0) return;
  long long stamp = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  if (stamp == g.controlStamp) return;
  g.controlStamp = stamp;
  DIR *d = opendir(g.controlDir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] != '.' && len > 4 && strcmp(e->d_name + len - 4, ".req") == 0) handle(g.controlDir, e->d_name);
  }
  closedir(d);
}
