/* space_yaml.c: typed access to the nodes of a space file (see space_yaml.h), and the
 * duration syntax. */
#include "space_yaml.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- errors */

int ld_line(const yaml_node_t *n) {
    return n ? (int)n->start_mark.line + 1 : 1;
}

/* "FILE:LINE: key 'KEY': problem", then back to space_load. */
void ld_fail(loader *ld, const yaml_node_t *at, const char *key, const char *fmt, ...) {
    int off = key ? snprintf(ld->err, ld->errlen, "%s:%d: key '%s': ", ld->path, ld_line(at), key)
                  : snprintf(ld->err, ld->errlen, "%s:%d: ", ld->path, ld_line(at));
    if (off >= 0 && (size_t)off < ld->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ld->err + off, ld->errlen - (size_t)off, fmt, ap);
        va_end(ap);
    }
    longjmp(ld->on_error, 1);
}

/* Build a key path such as "parameters.X.min" for messages (truncated if absurdly long). */
void ld_keyf(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- YAML node access */

yaml_node_t *ld_node(loader *ld, int index) {
    return yaml_document_get_node(&ld->doc, index);
}

const char *ld_kind(const yaml_node_t *n) {
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a map";
    default:
        return "nothing";
    }
}

const char *ld_text(const yaml_node_t *n) {
    return (const char *)n->data.scalar.value;
}

bool ld_is_plain(const yaml_node_t *n) {
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* A plain empty scalar, "~" or "null": YAML's null. No key of a space accepts it. */
bool ld_is_null(const yaml_node_t *n) {
    if (n->type != YAML_SCALAR_NODE || !ld_is_plain(n)) return false;
    const char *s = ld_text(n);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

void ld_expect(loader *ld, const yaml_node_t *n, const char *key, yaml_node_type_t type,
               const char *what) {
    if (n->type == YAML_SCALAR_NODE && ld_is_null(n))
        ld_fail(ld, n, key, "expected %s, got no value", what);
    if (n->type != type) ld_fail(ld, n, key, "expected %s, got %s", what, ld_kind(n));
}

/* Any non-null scalar, as a string (numbers and booleans keep their spelling). */
const char *ld_string(loader *ld, const yaml_node_t *n, const char *key) {
    ld_expect(ld, n, key, YAML_SCALAR_NODE, "a string");
    if (strlen(ld_text(n)) != n->data.scalar.length)
        ld_fail(ld, n, key, "contains a NUL character");
    return ld_text(n);
}

long ld_long(loader *ld, const yaml_node_t *n, const char *key) {
    ld_expect(ld, n, key, YAML_SCALAR_NODE, "an integer");
    const char *s = ld_text(n);
    if (!ld_is_plain(n)) ld_fail(ld, n, key, "expected an integer, got the string \"%s\"", s);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || isspace((unsigned char)*s))
        ld_fail(ld, n, key, "expected an integer, got '%s'", s);
    if (errno == ERANGE) ld_fail(ld, n, key, "integer '%s' is out of range", s);
    return v;
}

double ld_double(loader *ld, const yaml_node_t *n, const char *key) {
    ld_expect(ld, n, key, YAML_SCALAR_NODE, "a number");
    const char *s = ld_text(n);
    if (!ld_is_plain(n)) ld_fail(ld, n, key, "expected a number, got the string \"%s\"", s);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || isspace((unsigned char)*s))
        ld_fail(ld, n, key, "expected a number, got '%s'", s);
    if (errno == ERANGE || !isfinite(v)) ld_fail(ld, n, key, "number '%s' is out of range", s);
    return v;
}

bool ld_bool(loader *ld, const yaml_node_t *n, const char *key) {
    ld_expect(ld, n, key, YAML_SCALAR_NODE, "true or false");
    const char *s = ld_text(n);
    if (ld_is_plain(n)) {
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) return true;
        if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) return false;
    }
    ld_fail(ld, n, key, "expected true or false, got '%s'", s);
}

double ld_duration(loader *ld, const yaml_node_t *n, const char *key) {
    ld_expect(ld, n, key, YAML_SCALAR_NODE, "a duration");
    double s;
    if (!space_parse_duration(ld_text(n), &s))
        ld_fail(ld, n, key, "bad duration '%s' (use seconds, or e.g. 90s, 10m, 8h, 1h30m; > 0)",
                ld_text(n));
    return s;
}

/* Names that become environment variables, metrics and map keys: [A-Za-z_][A-Za-z0-9_]*. */
bool ld_is_identifier(const char *s) {
    if (!(isalpha((unsigned char)*s) || *s == '_')) return false;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
    return true;
}

/* The pairs of a mapping node, after checking that every key is a string, known (when known
 * is non-NULL, a NULL-terminated list) and not repeated. path names the map in messages. */
void ld_map_check(loader *ld, const yaml_node_t *map, const char *path, const char *const *known) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = ld_node(ld, p->key);
        char key[256];
        if (k->type != YAML_SCALAR_NODE || ld_is_null(k))
            ld_fail(ld, k, path, "a key must be a name, got %s", ld_kind(k));
        ld_keyf(key, sizeof key, "%s%s%s", path ? path : "", path ? "." : "", ld_text(k));
        if (known) {
            bool ok = false;
            for (const char *const *kn = known; *kn && !ok; kn++)
                ok = !strcmp(*kn, ld_text(k));
            if (!ok) ld_fail(ld, k, key, "unknown key");
        }
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++)
            if (!strcmp(ld_text(ld_node(ld, q->key)), ld_text(k)))
                ld_fail(ld, k, key, "duplicate key (first at line %d)",
                        ld_line(ld_node(ld, q->key)));
    }
}

/* The value under key in a (checked) mapping, or NULL; *key_node gets the key's node. */
yaml_node_t *ld_map_get(loader *ld, const yaml_node_t *map, const char *key,
                        yaml_node_t **key_node) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = ld_node(ld, p->key);
        if (!strcmp(ld_text(k), key)) {
            if (key_node) *key_node = k;
            return ld_node(ld, p->value);
        }
    }
    return NULL;
}

int ld_map_size(const yaml_node_t *map) {
    return (int)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
}

/* The value under key, which must be there: a missing key is reported at the line of at. */
yaml_node_t *ld_map_need(loader *ld, const yaml_node_t *map, const yaml_node_t *at,
                         const char *path, const char *key) {
    yaml_node_t *v = ld_map_get(ld, map, key, NULL);
    if (!v) {
        char full[256];
        ld_keyf(full, sizeof full, "%s%s%s", path ? path : "", path ? "." : "", key);
        ld_fail(ld, at, full, "missing (required)");
    }
    return v;
}

/* ---------------------------------------------------------------- durations */

int space_parse_duration(const char *s, double *seconds) {
    static const struct {
        char unit;
        double seconds;
    } units[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
    char *end;
    /* Decimal digits only: no sign, no leading space, no hex, no "inf". */
    if (!isdigit((unsigned char)*s) && *s != '.') return 0;
    if (strpbrk(s, "xX")) return 0;
    double plain = strtod(s, &end);
    if (end != s && !*end) { /* a bare number: seconds */
        if (!isfinite(plain) || plain <= 0) return 0;
        *seconds = plain;
        return 1;
    }
    double total = 0;
    size_t next_unit = 0; /* units must come in decreasing order, each at most once */
    while (*s) {
        if (!isdigit((unsigned char)*s) && *s != '.') return 0;
        double v = strtod(s, &end);
        if (end == s || !isfinite(v)) return 0;
        size_t u = next_unit;
        while (u < sizeof units / sizeof units[0] && units[u].unit != *end)
            u++;
        if (u == sizeof units / sizeof units[0]) return 0;
        total += v * units[u].seconds;
        next_unit = u + 1;
        s = end + 1;
    }
    if (!isfinite(total) || total <= 0) return 0;
    *seconds = total;
    return 1;
}
