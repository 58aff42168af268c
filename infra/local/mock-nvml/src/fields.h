/* Field readers shared by scenario.c and fault-parse.c. They return 1 on success, 0 after writing
 * "path.key: what" into err_buf (which the caller points at its own buffer first). An absent
 * optional field leaves *out untouched, so callers preset the default. */
#ifndef MOCK_NVML_FIELDS_H
#define MOCK_NVML_FIELDS_H

#include <stddef.h>

#include "json.h"

extern char *err_buf;
extern size_t err_cap;

int bad(const char *path, const char *what);
int get_num(const json_value *o, const char *key, const char *path, double *out, int required);
int get_bool(const json_value *o, const char *key, const char *path, int *out);
int get_str(const json_value *o, const char *key, const char *path, char *out, size_t cap, int required);
/* "0x20B210DE" or a number */
int get_hex(const json_value *o, const char *key, const char *path, unsigned int *out);

#endif
