/* spec_serve.h: the `engine` command's serving setup for the speculation and keepset knobs.
 *
 * From the knobs it opens what they ask for, beside one decoder:
 *   LM_HEAD_KEEPSET=N       MODEL_DIR/keepset.txt's first N ids -> the pruned head (keepset.h),
 *                           used for the greedy argmax and for perplexity alike;
 *   NUM_SPECULATIVE_TOKENS  the assistant folder (--assistant DIR, default MODEL_DIR-assistant
 *                           beside the model) -> a drafter with CENTROID_TOP_K clusters
 *                           (assistant.h) -> the speculative loop (speculate.h).
 * With neither, nothing is opened and main.c keeps its plain path. It also runs the bench
 * protocol (bench.c's own loop, bench_run_with) with every request served by the speculative
 * loop, and adds the speculation figures to the result JSON: mean accepted length and its
 * histogram, the draft / verify / other shares of decode time, and keepset coverage. */
#ifndef SPEC_SERVE_H
#define SPEC_SERVE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "assistant.h"
#include "bench.h"
#include "dataset.h"
#include "keepset.h"
#include "knobs.h"
#include "ppl.h"
#include "speculate.h"

typedef struct {
    int has_keepset;
    keepset ks;
    char *keepset_path;
    assistant *a;
    char *assistant_dir;
    drafter *dr;
    head *h;
    speculator sp;
    double decode_s; /* decode time of the timed bench (for the shares) */
} spec_serve;

/* Open what the knobs ask for beside decoder d (see above). Returns 0 or -1 with err naming
 * the file at fault. */
int spec_serve_open(spec_serve *s, decoder *d, const char *model_dir, const char *assistant_dir,
                    const knobs *k, char *err, size_t errlen);
void spec_serve_close(spec_serve *s);

/* Whether the knobs asked for anything (a keepset or speculation). */
int spec_serve_active(const spec_serve *s);

/* bench_run's protocol with every request served by spec_generate. */
int spec_serve_bench(spec_serve *s, const prompt_set *ps, int warmup_prompts, int max_new_tokens,
                     bench_result *r, char *err, size_t errlen);

/* Perplexity through the configured head (the keepset's when there is one). */
int spec_serve_ppl(spec_serve *s, decoder *d, int vocab, int max_len, const ppl_set *pp,
                   ppl_total *out, char *err, size_t errlen);

/* Generation for `engine generate`: up to max_new tokens, stopping before eos. Returns the
 * count or -1 (cache full). */
int spec_serve_generate(spec_serve *s, const int *prompt, int n, int max_new, int eos, int *out);

/* Speculation and keepset fields of the result JSON (pp may be NULL). */
void spec_serve_result(const spec_serve *s, cJSON *o, const ppl_set *pp);

#endif
