#!/usr/bin/env bash
# check_history.sh [REPO_DIR]: the product describes what it is and why, not how it came to be.
# Fails (exit 1, one FILE:LINE: text per hit) when a text file of the repository names work
# history: numbered sessions or calls of past experiments, issue numbers, remote-run folders
# and carried paths, GPU-time accounting. The files are the repository's own: tracked ones and
# untracked ones git does not ignore (`git ls-files --cached --others --exclude-standard`);
# binary files and docs/main_job/run_log.txt (a verbatim program log) are skipped.
# A hit on a line that an ALLOW entry below covers is legitimate and passes.
# Exit status: 0 clean, 1 hits, 2 no such folder or an unreadable checkout, 77 not a git
# checkout (nothing to check; ctest counts it as skipped).
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" 2>/dev/null || { echo "check_history: no folder $root" >&2; exit 2; }
if ! err=$(git rev-parse --is-inside-work-tree 2>&1 >/dev/null); then
    # A checkout git refuses to read (e.g. another user's: "dubious ownership") is an error.
    [ -e .git ] && { echo "check_history: $root: git: $err" >&2; exit 2; }
    echo "check_history: $root is not a git checkout: nothing to check" >&2
    exit 77
fi

# Case-insensitive extended regular expressions (GNU grep).
patterns=(
    '\bsession [0-9]'               # "session 44": a numbered working session
    '\bsessions? [0-9]+ (to|-|and)' # "sessions 34 and 41", "session 12-14"
    '\bcall [0-9]'                  # "call 3": a numbered remote run
    '\bcalls [0-9]'                 # "calls 3-4"
    'issue #?[0-9]'                 # "issue 4", "issue #12": the tracker's numbers
    '\bchapter [0-9]'               # "chapter 7" of a work log
    'gpu_logs'                      # the raw remote-run log folder
    '\bs[0-9]{2}/'                  # "s44/": a session-numbered run folder
    'files_at'                      # the remote-run tool's return folder
    '(^|[^a-z0-9_])\.carry/'        # the remote-run tool's carried folder
    'GPU-time'                      # GPU-time budgets of past sessions
    'device time'                   # the remote machine's time budget
    'previous engineer'             # who did what
    '\ba reviewer (found|noted|said|asked|flagged)' # who did what
    'GPU budget'                    # GPU-time accounting of past sessions
)

# ALLOW: "FILE_GLOB|LINE_REGEX|reason". A hit in a file matching FILE_GLOB (bash pattern,
# relative to the repository root) on a line matching LINE_REGEX (case-insensitive ERE)
# passes. Keep each entry narrow and give its reason.
allow=(
    # This checker and its test spell the patterns out, as patterns and as test data.
    'scripts/check_history.sh|.|the checker lists the patterns it looks for'
    'tests/tools/test_check_history.sh|.|the checker test writes history lines on purpose'
    # Test and evaluation data that happens to contain the words.
    'tests/engine/tokenizer/texts.jsonl|Call 555-0123|tokenizer test text: a phone number'
    'models/gemma4-tiny/eval/*.jsonl|See Chapter [0-9]+[.]|Brown corpus text in the evaluation sets'
    # Keeping a local scratch folder out of git is not history in the product.
    '.gitignore|^/[.]carry/$|ignore rule for a local scratch folder'
)

args=()
for p in "${patterns[@]}"; do args+=(-e "$p"); done

allowed() { # allowed FILE LINE_TEXT: 0 when an ALLOW entry covers it
    local entry glob re
    for entry in "${allow[@]}"; do
        glob=${entry%%|*}
        re=${entry#*|}
        re=${re%|*}
        # shellcheck disable=SC2053 # the glob is a pattern on purpose
        [[ $1 == $glob ]] || continue
        grep -qEi -e "$re" <<<"$2" && return 0
    done
    return 1
}

hits=0
while IFS= read -r hit; do
    f=${hit%%:*}
    rest=${hit#*:}
    n=${rest%%:*}
    text=${rest#*:}
    allowed "$f" "$text" && continue
    echo "$f:$n: ${text:0:200}"
    hits=$((hits + 1))
done < <(git ls-files -z --cached --others --exclude-standard | sort -zu |
    while IFS= read -r -d '' f; do
        # deleted in the working tree but still in the index; a verbatim program log
        [ -f "$f" ] && [ "$f" != docs/main_job/run_log.txt ] && printf '%s\0' "$f"
    done | xargs -0 -r grep -nEiIH "${args[@]}" --)

if [ "$hits" -gt 0 ]; then
    echo "check_history: $hits line(s) name work history; describe what the thing is and why" >&2
    echo "(or, for a legitimate use, add a narrow ALLOW entry with its reason to $0)" >&2
    exit 1
fi
echo "check_history: clean"
