/* speculate.c: the serving loop - prefill, then draft / verify / accept / rollback steps (see
 * speculate.h). */
#include "speculate.h"

#include <stdio.h>
#include <string.h>

#include "decoder.h"
#include "util.h"

_Static_assert(SPEC_MAX_K <= DRAFTER_MAX_STEPS, "a draft round must fit one drafter_draft");

uint64_t output_hash_token(uint64_t h, int id) {
    for (int b = 0; b < 4; b++) {
        h ^= (uint64_t)((unsigned)id >> (8 * b) & 0xff);
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* The MTP drafter as a proposer: h from the target row, then k chained steps at position pos
 * (on the device as one graph where the backend can). */
static int drafter_propose(void *ctx, int row, int x, int pos, int k, int *out) {
    return drafter_draft(ctx, row, x, pos, k, out);
}

void speculator_init(speculator *s, decoder *d, head *h, drafter *dr, int k) {
    memset(s, 0, sizeof *s);
    CHECK(k >= 0 && k <= SPEC_MAX_K && (k == 0 || dr));
    s->d = d;
    s->h = h;
    s->k = k;
    if (dr) {
        s->propose = drafter_propose;
        s->propose_ctx = dr;
    }
}

/* Hand one token out: into out[*served], the hash and the served hook. */
static void serve_token(speculator *s, int id, int *out, uint64_t *hash, int *served) {
    if (out) out[*served] = id;
    if (hash) *hash = output_hash_token(*hash, id);
    if (s->served) s->served(s->served_ctx, id);
    ++*served;
}

int spec_generate(speculator *s, const int *prompt, int n, int max_new, int stop_id, int *out,
                  double *first_at, uint64_t *hash) {
    decoder *d = s->d;
    spec_stats *st = &s->stats;
    int buf[SPEC_MAX_K + 1], greedy[SPEC_MAX_K + 1];

    decoder_begin(d, n + max_new);
    int x;
    if (n < 1 || head_forward_argmax(s->h, prompt, n, 1, &x)) return -1;
    int row = d->hidden_rows - 1;
    if (first_at) *first_at = now_seconds();

    /* After a partial accept the rollback waits until the drafter has read the verify row
     * it starts from (a rollback forgets the hidden rows); the drafter reads no KV past x. */
    int cut = -1;
    int served = 0;
    for (;;) {
        if (x == stop_id) break;
        serve_token(s, x, out, hash, &served);
        if (served == max_new) break;
        /* x sits at position P = decoder_pos; draft at most what is still to be served. */
        const int pos = cut >= 0 ? cut : decoder_pos(d), left = max_new - served;
        int k = s->k < left - 1 ? s->k : left - 1, m = 0;
        buf[0] = x;
        if (k > 0) {
            double a = now_seconds();
            k = s->propose(s->propose_ctx, row, x, pos, k, buf + 1);
            st->draft_s += now_seconds() - a;
            st->drafted += k;
        }
        if (cut >= 0) CHECK(decoder_truncate(d, cut) == 0);
        double v = now_seconds();
        if (head_forward_argmax(s->h, buf, k + 1, k + 1, greedy)) return -1;
        st->verify_s += now_seconds() - v;
        while (m < k && buf[m + 1] == greedy[m])
            m++;
        /* Serve d1..dm; g_m becomes the pending token. */
        for (int i = 1; i <= m; i++) {
            if (buf[i] == stop_id) {
                m = i - 1; /* served up to the stop; the rest of the step is dropped */
                x = stop_id;
                break;
            }
            serve_token(s, buf[i], out, hash, &served);
        }
        CHECK(served < max_new); /* k <= left - 1 leaves room for the bonus token */
        cut = m < k ? pos + m + 1 : -1;
        if (x != stop_id) x = greedy[m];
        row = m;
        st->steps++;
        st->accepted += m;
        st->served += m + 1;
        st->hist[m]++;
    }
    return served;
}

double spec_mean_accept(const spec_stats *st) {
    return st->steps ? (double)st->accepted / (double)st->steps : 0.0;
}
