/*
 * The live MIG layout: a scenario may name `migFile`, a JSON array with one array of MIG devices
 * per GPU (`[[{"profile":"3g.40gb","giProfileId":9,"start":0,"size":4,"giId":1,"uuid":"MIG-…"}], …]`,
 * the fields of a GPU's `migDevices`). It stands for what mig-manager leaves on the GPUs after a
 * reconfiguration: every API call checks the file's mtime and size and re-reads it when they moved.
 * Only GPUs in MIG mode take their entry; a missing or invalid file leaves every layout as it was
 * (the reason goes to mockNvmlLastError). Writers should replace it atomically.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "json.h"
#include "mock.h"

int load_mig(const json_value *m, mock_gpu *gpu, int j, const char *gpath);

void refresh_mig_file(void) {
  char *text = read_if_changed(g.migFile, g.migStamp);
  if (!text) return;
  char perr[256], local_err[400] = "";
  json_value *root = json_parse(text, perr, sizeof perr);
  free(text);
  err_buf = local_err;
  err_cap = sizeof local_err;
  static mock_mig migs[MAX_GPUS][MAX_MIGS];
  int counts[MAX_GPUS] = {0};
  int ok = root && root->type == JSON_ARRAY;
  if (!ok) snprintf(local_err, sizeof local_err, root ? "expected an array per GPU" : "invalid JSON: %s", perr);
  for (size_t i = 0; ok && i < root->count && i < (size_t)g.gpuCount; i++) {
    const json_value *list = root->items[i];
    char where[64];
    snprintf(where, sizeof where, "migFile[%zu]", i);
    if (list->type != JSON_ARRAY || list->count > MAX_MIGS) { ok = bad(where, "expected an array of at most 8 MIG devices"); break; }
    /* Parsed into a copy of the GPU, so a bad entry changes nothing. */
    mock_gpu copy = g.gpus[i];
    for (size_t j = 0; ok && j < list->count; j++) ok = load_mig(list->items[j], &copy, (int)j, where);
    if (ok) memcpy(migs[i], copy.migs, sizeof copy.migs[0] * list->count);
    counts[i] = (int)list->count;
  }
  if (ok) {
    for (size_t i = 0; i < root->count && i < (size_t)g.gpuCount; i++) {
      if (!g.gpus[i].migMode) continue;
      memcpy(g.gpus[i].migs, migs[i], sizeof migs[i][0] * (size_t)counts[i]);
      g.gpus[i].migCount = counts[i];
    }
  } else {
    snprintf(g.lastError, sizeof g.lastError, "%s: %s", g.migFile, local_err);
  }
  json_free(root);
}
