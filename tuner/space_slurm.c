/* space_slurm.c: the map form of engine.launcher, {slurm: {...}} (slurm.h).
 *
 *   launcher:
 *     slurm:
 *       partition: gpu        # optional: --partition
 *       gres: "gpu:1"         # optional: --gres
 *       time: 20m             # optional duration: --time (default: engine.timeout + 1 min);
 *                             #   not shorter than engine.timeout
 *       extra: [--exclusive]  # optional: further srun options, one argument each
 *
 * The tuner sets --job-name, --nodes and --ntasks itself, so extra may not give them.
 */
#include <string.h>

#include "slurm.h"
#include "space_yaml.h"

/* srun options the tuner sets itself (and their short forms). */
static const char *const OWN_OPTIONS[] = {"--job-name", "-J", "--nodes", "-N",
                                          "--ntasks",   "-n", NULL};

/* A plain word for an srun option value: no blanks, no control characters, not empty. */
static void check_word(loader *ld, const yaml_node_t *n, const char *key, const char *s) {
    if (!s[0]) ld_fail(ld, n, key, "empty value");
    for (const char *c = s; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f)
            ld_fail(ld, n, key, "'%s' has a blank or a control character", s);
}

void space_load_slurm(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    static const char *const top[] = {"slurm", NULL};
    static const char *const known[] = {"partition", "gres", "time", "extra", NULL};
    ld_map_check(ld, n, "engine.launcher", top);
    yaml_node_t *k, *s = ld_map_get(ld, n, "slurm", &k);
    if (!s)
        ld_fail(ld, n, "engine.launcher",
                "expected a template string with {cmd} or a map {slurm: {...}}");
    ld_expect(ld, s, "engine.launcher.slurm", YAML_MAPPING_NODE,
              "a map {partition: P, gres: G, time: T, extra: [...]}");
    ld_map_check(ld, s, "engine.launcher.slurm", known);
    slurm_launcher *l = xcalloc(1, sizeof *l);
    sp->slurm = l;
    yaml_node_t *v;
    if ((v = ld_map_get(ld, s, "partition", NULL))) {
        l->partition = xstrdup(ld_string(ld, v, "engine.launcher.slurm.partition"));
        check_word(ld, v, "engine.launcher.slurm.partition", l->partition);
    }
    if ((v = ld_map_get(ld, s, "gres", NULL))) {
        l->gres = xstrdup(ld_string(ld, v, "engine.launcher.slurm.gres"));
        check_word(ld, v, "engine.launcher.slurm.gres", l->gres);
    }
    if ((v = ld_map_get(ld, s, "time", NULL))) {
        l->time_s = ld_duration(ld, v, "engine.launcher.slurm.time");
        if (l->time_s < sp->timeout_s)
            ld_fail(ld, v, "engine.launcher.slurm.time",
                    "%g s is shorter than engine.timeout (%g s): Slurm would end trials before "
                    "the tuner's timeout",
                    l->time_s, sp->timeout_s);
    }
    if ((v = ld_map_get(ld, s, "extra", NULL))) {
        ld_expect(ld, v, "engine.launcher.slurm.extra", YAML_SEQUENCE_NODE,
                  "a list of srun options");
        int count = (int)(v->data.sequence.items.top - v->data.sequence.items.start);
        l->extra = xcalloc((size_t)count + 1, sizeof *l->extra);
        for (int i = 0; i < count; i++) {
            char key[64];
            ld_keyf(key, sizeof key, "engine.launcher.slurm.extra[%d]", i);
            yaml_node_t *e = ld_node(ld, v->data.sequence.items.start[i]);
            const char *arg = ld_string(ld, e, key);
            if (arg[0] != '-')
                ld_fail(ld, e, key, "'%s' is not an srun option (options start with '-')", arg);
            for (int o = 0; OWN_OPTIONS[o]; o++) {
                size_t len = strlen(OWN_OPTIONS[o]);
                if (!strncmp(arg, OWN_OPTIONS[o], len) &&
                    (arg[len] == '\0' || arg[len] == '=' || (len == 2 && arg[len] != '-')))
                    ld_fail(ld, e, key,
                            "'%s': the tuner sets %s itself (the job is named after the study "
                            "and the trial, one task on one node)",
                            arg, OWN_OPTIONS[o]);
            }
            l->extra[l->n_extra++] = xstrdup(arg);
        }
    }
}
