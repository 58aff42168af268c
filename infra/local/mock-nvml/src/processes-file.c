/*
 * The live process list: a scenario may name `processesFile`, a JSON array with one array of
 * processes per GPU (`[[{"pid":4100,"usedMiB":4000,"gpuInstanceId":1}], []]`, same fields as a
 * GPU's `processes`). Every API call checks the file's mtime and size and re-reads it when they
 * moved, so another process (the local stack) can start and stop "GPU processes" as pods come and
 * go. A file that is missing or invalid leaves the lists as they were (the reason goes to
 * mockNvmlLastError); GPUs beyond the array keep theirs. Writers should replace it atomically.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fields.h"
#include "mock.h"

/* The file's text when its mtime or size moved since `stamp` (which it updates), else NULL. */
char *read_if_changed(const char *path, long long stamp[2]) {
  if (!path[0]) return NULL;
  struct stat st;
  if (stat(path, &st) != 0) return NULL;
  long long now[2] = {(long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, (long long)st.st_size};
  if (now[0] == stamp[0] && now[1] == stamp[1]) return NULL;
  stamp[0] = now[0];
  stamp[1] = now[1];
  return mock_read_file(path);
}

void refresh_processes_file(void) {
  char *text = read_if_changed(g.processesFile, g.processesStamp);
  if (!text) return;
  char perr[256], local_err[400] = "";
  json_value *root = json_parse(text, perr, sizeof perr);
  free(text);
  err_buf = local_err;
  err_cap = sizeof local_err;
  mock_proc procs[MAX_GPUS][MAX_PROCS];
  int counts[MAX_GPUS] = {0};
  int ok = root && root->type == JSON_ARRAY;
  if (!ok) snprintf(local_err, sizeof local_err, root ? "expected an array per GPU" : "invalid JSON: %s", perr);
  for (size_t i = 0; ok && i < root->count && i < (size_t)g.gpuCount; i++) {
    const json_value *list = root->items[i];
    char where[64];
    snprintf(where, sizeof where, "processesFile[%zu]", i);
    if (list->type != JSON_ARRAY || list->count > MAX_PROCS) { ok = bad(where, "expected an array of at most 64"); break; }
    for (size_t j = 0; ok && j < list->count; j++) {
      char p[96];
      snprintf(p, sizeof p, "%s[%zu]", where, j);
      mock_proc *pr = &procs[i][j];
      double n = 0;
      ok = get_num(list->items[j], "pid", p, &n, 1); pr->pid = (unsigned int)n;
      n = 0; ok = ok && get_num(list->items[j], "usedMiB", p, &n, 1); pr->usedMiB = (unsigned long long)n;
      n = NO_INSTANCE; ok = ok && get_num(list->items[j], "gpuInstanceId", p, &n, 0); pr->gi = (unsigned int)n;
      n = NO_INSTANCE; ok = ok && get_num(list->items[j], "computeInstanceId", p, &n, 0); pr->ci = (unsigned int)n;
      n = 0; ok = ok && get_num(list->items[j], "mps", p, &n, 0); pr->mps = n != 0;
    }
    counts[i] = (int)list->count;
  }
  if (ok) {
    for (size_t i = 0; i < root->count && i < (size_t)g.gpuCount; i++) {
      memcpy(g.gpus[i].procs, procs[i], sizeof procs[i][0] * (size_t)counts[i]);
      g.gpus[i].procCount = counts[i];
    }
  } else {
    snprintf(g.lastError, sizeof g.lastError, "%s: %s", g.processesFile, local_err);
  }
  json_free(root);
}
