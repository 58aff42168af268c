/*
 * A small JSON reader for scenario files: enough for objects, arrays, numbers, strings (with
 * escapes, \u kept as '?' outside ASCII), true/false/null. No dependency, so the mock builds with a
 * bare `cc` on any CI machine.
 */
#ifndef MOCK_NVML_JSON_H
#define MOCK_NVML_JSON_H

#include <stddef.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value {
  json_type type;
  double number;              /* JSON_NUMBER, JSON_BOOL (0/1) */
  char *string;               /* JSON_STRING */
  struct json_value **items;  /* JSON_ARRAY values, JSON_OBJECT values */
  char **keys;                /* JSON_OBJECT keys, parallel to items */
  size_t count;
} json_value;

/* Parses text; on failure returns NULL and writes "offset N: what" into err. */
json_value *json_parse(const char *text, char *err, size_t err_len);
void json_free(json_value *value);
/* Member of an object by key, or NULL (also NULL when obj is not an object). */
const json_value *json_get(const json_value *obj, const char *key);

#endif
