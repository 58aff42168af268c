/* Typed field readers for scenario objects; each failure writes "path.key: what" into err_buf. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"

char *err_buf;
size_t err_cap;

int bad(const char *path, const char *what) {
  snprintf(err_buf, err_cap, "%s: %s", path, what);
  return 0;
}

int get_num(const json_value *o, const char *key, const char *path, double *out, int required) {
  const json_value *v = json_get(o, key);
  char where[256];
  snprintf(where, sizeof where, "%s%s%s", path, *path ? "." : "", key);
  if (!v) return required ? bad(where, "is required") : 1;
  if (v->type != JSON_NUMBER) return bad(where, "expected a number");
  *out = v->number;
  return 1;
}

int get_bool(const json_value *o, const char *key, const char *path, int *out) {
  const json_value *v = json_get(o, key);
  char where[256];
  snprintf(where, sizeof where, "%s%s%s", path, *path ? "." : "", key);
  if (!v) return 1;
  if (v->type != JSON_BOOL) return bad(where, "expected true or false");
  *out = (int)v->number;
  return 1;
}

int get_str(const json_value *o, const char *key, const char *path, char *out, size_t cap, int required) {
  const json_value *v = json_get(o, key);
  char where[256];
  snprintf(where, sizeof where, "%s%s%s", path, *path ? "." : "", key);
  if (!v) return required ? bad(where, "is required") : 1;
  if (v->type != JSON_STRING) return bad(where, "expected a string");
  if (strlen(v->string) >= cap) return bad(where, "too long");
  strcpy(out, v->string);
  return 1;
}

int get_hex(const json_value *o, const char *key, const char *path, unsigned int *out) {
  const json_value *v = json_get(o, key);
  char where[256];
  snprintf(where, sizeof where, "%s.%s", path, key);
  if (!v) return 1;
  if (v->type == JSON_NUMBER) { *out = (unsigned int)v->number; return 1; }
  if (v->type != JSON_STRING) return bad(where, "expected a hex string like \"0x20B210DE\"");
  char *end = NULL;
  unsigned long n = strtoul(v->string, &end, 16);
  if (end == v->string || *end) return bad(where, "expected a hex string like \"0x20B210DE\"");
  *out = (unsigned int)n;
  return 1;
}
