/* Recursive-descent JSON reader (see json.h). Depth is capped so a hostile file cannot blow the stack. */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct {
  const char *s;
  size_t pos;
  char *err;
  size_t err_len;
  int failed;
} reader;

static void fail(reader *r, const char *what) {
  if (!r->failed) snprintf(r->err, r->err_len, "offset %zu: %s", r->pos, what);
  r->failed = 1;
}

static void skip_ws(reader *r) {
  while (r->s[r->pos] == ' ' || r->s[r->pos] == '\n' || r->s[r->pos] == '\r' || r->s[r->pos] == '\t') r->pos++;
}

static json_value *new_value(json_type type) {
  json_value *v = calloc(1, sizeof *v);
  if (v) v->type = type;
  return v;
}

static int push(json_value *v, char *key, json_value *item) {
  json_value **items = realloc(v->items, (v->count + 1) * sizeof *items);
  if (!items) return 0;
  v->items = items;
  if (v->type == JSON_OBJECT) {
    char **keys = realloc(v->keys, (v->count + 1) * sizeof *keys);
    if (!keys) return 0;
    v->keys = keys;
    v->keys[v->count] = key;
  }
  v->items[v->count++] = item;
  return 1;
}

static char *parse_string_raw(reader *r) {
  /* r->s[r->pos] == '"' */
  r->pos++;
  size_t cap = 32, len = 0;
  char *out = malloc(cap);
  if (!out) return NULL;
  for (;;) {
    char c = r->s[r->pos];
    if (c == '\0') { fail(r, "unterminated string"); free(out); return NULL; }
    if (c == '"') { r->pos++; break; }
    if ((unsigned char)c < 0x20) { fail(r, "control character in string"); free(out); return NULL; }
    if (c == '\\') {
      r->pos++;
      char e = r->s[r->pos];
      switch (e) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case '/': c = '/'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
          unsigned code = 0;
          for (int i = 1; i <= 4; i++) {
            char h = r->s[r->pos + i];
            code <<= 4;
            if (h >= '0' && h <= '9') code |= (unsigned)(h - '0');
            else if (h >= 'a' && h <= 'f') code |= (unsigned)(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') code |= (unsigned)(h - 'A' + 10);
            else { fail(r, "bad \\u escape"); free(out); return NULL; }
          }
          r->pos += 4;
          c = code < 0x80 ? (char)code : '?';
          break;
        }
        default: fail(r, "bad escape"); free(out); return NULL;
      }
    }
    if (len + 2 > cap) {
      cap *= 2;
      char *grown = realloc(out, cap);
      if (!grown) { free(out); return NULL; }
      out = grown;
    }
    out[len++] = c;
    r->pos++;
  }
  out[len] = '\0';
  return out;
}

static json_value *parse_value(reader *r, int depth);

static json_value *parse_container(reader *r, int depth, json_type type) {
  char close = type == JSON_ARRAY ? ']' : '}';
  json_value *v = new_value(type);
  if (!v) return NULL;
  r->pos++;
  skip_ws(r);
  if (r->s[r->pos] == close) { r->pos++; return v; }
  for (;;) {
    char *key = NULL;
    skip_ws(r);
    if (type == JSON_OBJECT) {
      if (r->s[r->pos] != '"') { fail(r, "expected a key"); json_free(v); return NULL; }
      key = parse_string_raw(r);
      if (!key) { json_free(v); return NULL; }
      skip_ws(r);
      if (r->s[r->pos] != ':') { fail(r, "expected ':'"); free(key); json_free(v); return NULL; }
      r->pos++;
    }
    json_value *item = parse_value(r, depth + 1);
    if (!item || !push(v, key, item)) { free(key); json_free(item); json_free(v); return NULL; }
    skip_ws(r);
    if (r->s[r->pos] == ',') { r->pos++; continue; }
    if (r->s[r->pos] == close) { r->pos++; return v; }
    fail(r, type == JSON_ARRAY ? "expected ',' or ']'" : "expected ',' or '}'");
    json_free(v);
    return NULL;
  }
}

static json_value *parse_value(reader *r, int depth) {
  if (depth > MAX_DEPTH) { fail(r, "nested too deeply"); return NULL; }
  skip_ws(r);
  const char *p = r->s + r->pos;
  if (*p == '{') return parse_container(r, depth, JSON_OBJECT);
  if (*p == '[') return parse_container(r, depth, JSON_ARRAY);
  if (*p == '"') {
    char *s = parse_string_raw(r);
    if (!s) return NULL;
    json_value *v = new_value(JSON_STRING);
    if (!v) { free(s); return NULL; }
    v->string = s;
    return v;
  }
  if (strncmp(p, "true", 4) == 0 || strncmp(p, "false", 5) == 0) {
    json_value *v = new_value(JSON_BOOL);
    if (v) v->number = *p == 't';
    r->pos += *p == 't' ? 4 : 5;
    return v;
  }
  if (strncmp(p, "null", 4) == 0) { r->pos += 4; return new_value(JSON_NULL); }
  if (*p == '-' || (*p >= '0' && *p <= '9')) {
    char *end = NULL;
    double n = strtod(p, &end);
    if (end == p) { fail(r, "bad number"); return NULL; }
    json_value *v = new_value(JSON_NUMBER);
    if (v) v->number = n;
    r->pos += (size_t)(end - p);
    return v;
  }
  fail(r, *p ? "unexpected character" : "unexpected end of input");
  return NULL;
}

json_value *json_parse(const char *text, char *err, size_t err_len) {
  reader r = {text, 0, err, err_len, 0};
  json_value *v = parse_value(&r, 0);
  if (!v) {
    if (!r.failed) fail(&r, "out of memory");
    return NULL;
  }
  skip_ws(&r);
  if (r.s[r.pos] != '\0') { fail(&r, "trailing characters"); json_free(v); return NULL; }
  return v;
}

void json_free(json_value *v) {
  if (!v) return;
  for (size_t i = 0; i < v->count; i++) {
    json_free(v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->string);
  free(v);
}

const json_value *json_get(const json_value *obj, const char *key) {
  if (!obj || obj->type != JSON_OBJECT) return NULL;
  for (size_t i = 0; i < obj->count; i++)
    if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
  return NULL;
}
