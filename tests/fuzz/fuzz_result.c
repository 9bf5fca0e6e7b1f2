/* fuzz_result.c: libFuzzer target for an engine's result: the result parser (truncated
 * JSON, NaN, keys twice), the search for the last JSON line of stdout, and the verdict
 * with the space's bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "runner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void judge(const cJSON *j) {
    trial_status st;
    free(runner_judge(fuzz_space(), j, &st));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *why = NULL;
    cJSON *j = runner_parse_result((const char *)data, size, &why);
    if (j) judge(j);
    cJSON_Delete(j);
    free(why);
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    cJSON *line = runner_last_json_line(text);
    if (line) judge(line);
    cJSON_Delete(line);
    free(text);
    return 0;
}
