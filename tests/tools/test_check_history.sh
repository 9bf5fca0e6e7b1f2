#!/usr/bin/env bash
# The history checker (scripts/check_history.sh) on throw-away git repositories: every pattern
# it promises is caught and named FILE:LINE with exit 1; an allow-listed use passes only in its
# own file; binary files, ignored files, files deleted from the working tree and the verbatim
# main-job log are not read; a folder outside git is skipped with 77.
set -uo pipefail
# shellcheck source=tests/tools/check.sh
source "$TESTS_DIR/check.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# repo NAME: a fresh repository holding a copy of the checker; prints its path.
repo() {
    local r="$tmp/$1"
    mkdir -p "$r/scripts" && git -C "$r" init -q && cp "$ROOT/scripts/check_history.sh" "$r/scripts/"
    echo "$r"
}
run() { # run REPO: "rc N" and the checker's output
    local out rc
    out=$(bash "$1/scripts/check_history.sh" "$1" 2>&1)
    rc=$?
    echo "rc $rc"
    echo "$out"
}

# 1. A tracked file with "session 12" fails, naming the file and the line.
r=$(repo one)
printf 'The engine.\nMeasured in session 12 on an H200.\n' >"$r/notes.md"
git -C "$r" add notes.md
out=$(run "$r")
check "session 12 is refused" "$out" "rc 1"
check "the hit names file and line" "$out" "notes.md:2: Measured in session 12"

# 2. Every promised pattern is caught (one line each, in an untracked but not ignored file).
r=$(repo patterns)
cat >"$r/doc.md" <<'EOF'
as of session 44 the default is auto
sessions 34 and 41 measured it
see call 3 of that run
calls 3-4 agree
fixed in issue 6
per issue #12
the logs are in docs/gpu_logs/
read s44/call4/log.txt
copy them from files_at
carry: [.carry/p]
GPU-time left: 7 minutes
about 7 minutes of device time
as chapter 7 of the log says
the previous engineer left it
a reviewer found the race
a fresh GPU budget
EOF
out=$(run "$r")
check "16 lines, 16 hits" "$out" "check_history: 16 line(s)"
for n in $(seq 1 16); do check "line $n caught" "$out" "doc.md:$n:"; done

# 3. The allow-listed use passes in its own file and fails anywhere else.
r=$(repo allowed)
mkdir -p "$r/tests/engine/tokenizer"
echo '{"text": "Call 555-0123 or +1 (800) 555-0199"}' >"$r/tests/engine/tokenizer/texts.jsonl"
git -C "$r" add -A
out=$(run "$r")
check "the allow-listed test text passes" "$out" "rc 0"
check "clean says so" "$out" "check_history: clean"
echo '{"text": "Call 555-0123"}' >"$r/other.jsonl"
out=$(run "$r")
check "the same text in another file fails" "$out" "other.jsonl:1:"
check "... and only there" "n=$(grep -c 'texts.jsonl' <<<"$out")" "n=0"

# 4. Not read: a binary file, an ignored file, a tracked file deleted from the working tree,
#    docs/main_job/run_log.txt.
r=$(repo skipped)
printf 'session 12\0\1\2' >"$r/blob.bin"
echo 'session 12' >"$r/scratch.txt"
echo 'scratch.txt' >"$r/.gitignore"
echo 'session 12' >"$r/gone.md"
mkdir -p "$r/docs/main_job"
echo 'session 12' >"$r/docs/main_job/run_log.txt"
git -C "$r" add -A && rm "$r/gone.md"
out=$(run "$r")
check "binary, ignored, deleted and the main-job log are skipped" "$out" "rc 0"

# 5. Outside a git checkout there is nothing to check: 77 (ctest's skip code).
mkdir -p "$tmp/plain"
out=$(bash "$ROOT/scripts/check_history.sh" "$tmp/plain" 2>&1; echo "rc $?")
check "no git: skipped" "$out" "rc 77"

finish test_check_history
