/* space_yaml.h: the space loader's view of a libyaml document, shared by the files of the
 * loader (space.c and the section readers space_engine.c, space_params.c, space_slurm.c).
 *
 * Typed access to YAML nodes that ends the load on the first problem: every ld_ function
 * that takes the loader either returns a valid value or calls ld_fail, which writes
 * "FILE:LINE: key 'KEY': problem" into the caller's buffer and longjmps back to space_load.
 * Numbers must be plain scalars (a quoted "3" is a string); YAML's null (an empty value,
 * "~", "null") is accepted by none of them. */
#ifndef SPACE_YAML_H
#define SPACE_YAML_H

#include "space.h"
#include "util.h"

#include <setjmp.h>
#include <stdbool.h>
#include <yaml.h>

typedef struct {
    const char *path;
    yaml_document_t doc;
    space *sp; /* the space being built; everything allocated hangs off it at once */
    char *err; /* [errlen] the caller's message buffer */
    size_t errlen;
    jmp_buf on_error;
} loader;

/* The 1-based line where a node starts (1 for NULL). */
int ld_line(const yaml_node_t *n);
/* Write the message (key NULL: none named) and jump back to space_load. */
NORETURN void ld_fail(loader *ld, const yaml_node_t *at, const char *key, const char *fmt, ...)
    PRINTF_LIKE(4, 5);
/* snprintf for key paths such as "parameters.X.min" (truncated if absurdly long). */
void ld_keyf(char *buf, size_t n, const char *fmt, ...) PRINTF_LIKE(3, 4);

yaml_node_t *ld_node(loader *ld, int index);
const char *ld_kind(const yaml_node_t *n); /* "a scalar", "a list", "a map" */
const char *ld_text(const yaml_node_t *n); /* a scalar's text */
bool ld_is_plain(const yaml_node_t *n);    /* an unquoted scalar */
bool ld_is_null(const yaml_node_t *n);
/* Fail unless n has the given type ("expected WHAT, got ..."). */
void ld_expect(loader *ld, const yaml_node_t *n, const char *key, yaml_node_type_t type,
               const char *what);

/* Scalars as typed values. */
const char *ld_string(loader *ld, const yaml_node_t *n, const char *key);
long ld_long(loader *ld, const yaml_node_t *n, const char *key);
double ld_double(loader *ld, const yaml_node_t *n, const char *key);
bool ld_bool(loader *ld, const yaml_node_t *n, const char *key);
double ld_duration(loader *ld, const yaml_node_t *n, const char *key);
/* [A-Za-z_][A-Za-z0-9_]*: environment variables and metric names. */
bool ld_is_identifier(const char *s);

/* Check that every key of a mapping is a name, known (known: NULL-terminated list, or NULL
 * for any name) and not repeated. path names the map in messages (NULL: the top level). */
void ld_map_check(loader *ld, const yaml_node_t *map, const char *path, const char *const *known);
/* The value under key in a checked mapping, or NULL; *key_node gets the key's node. */
yaml_node_t *ld_map_get(loader *ld, const yaml_node_t *map, const char *key,
                        yaml_node_t **key_node);
int ld_map_size(const yaml_node_t *map);
/* The value under key, which must be there; a missing key is reported at the line of at. */
yaml_node_t *ld_map_need(loader *ld, const yaml_node_t *map, const yaml_node_t *at,
                         const char *path, const char *key);

/* Refuse a knob or engine.env name the tuner sets, or a risky one not in allow_env (space.c;
 * allow_env must be loaded first). */
void space_check_env_name(loader *ld, const yaml_node_t *at, const char *key, const char *name);

/* The section readers of the other loader files; each fills its part of ld->sp. */
/* engine: command, workdir, env, timeout, launcher, result (space_engine.c). */
void space_load_engine(loader *ld, const yaml_node_t *key_node, const yaml_node_t *n);
/* engine.launcher in its map form {slurm: {...}} into ld->sp->slurm (space_slurm.c); call
 * after engine.timeout is loaded. */
void space_load_slurm(loader *ld, const yaml_node_t *n);
/* parameters: the knobs and their lattices (space_params.c). */
void space_load_parameters(loader *ld, const yaml_node_t *n);
/* baseline: a level of every knob, named or its default; call after the parameters
 * (space_params.c). */
void space_load_baseline(loader *ld, const yaml_node_t *key_node, const yaml_node_t *n);

#endif
