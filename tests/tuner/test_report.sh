# tuner report: a study's report folder (report.md + plot.png drawn by gnuplot) for a study
# with a manifest, one with no feasible point, one where everything failed, one with no
# constraint and one interrupted before its verification; and the error paths (no study,
# a damaged journal or manifest, gnuplot missing, bad command lines).
source "$TESTS_DIR/sweep_lib.sh"

# md_section FILE TITLE: the lines of the section "## TITLE" (up to the next "## ").
md_section() { awk -v t="## $2" '$0 == t {on = 1; next} /^## / {on = 0} on' "$1"; }
# table_rows: the data rows of the Markdown tables on stdin (not the head or the rule).
table_rows() { grep '^| ' | grep -v '^|---' | tail -n +2; }
is_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] && [ "$(wc -c <"$1")" -gt 5000 ]; }

# 1. A grid study with crashes (W=256), garbage (W=384,K=5,S=8192), infinite ppl (S=2048)
#    and a held-out verification: 32 points, 14 failed.
write_space demo.yaml <<'YAML'
engine:
  command: [@ENGINE@]
  env: {SYNTH_CRASH_WHEN: SLIDING_WINDOW=256, SYNTH_GARBAGE_WHEN: LM_HEAD_KEEPSET=8192}
  timeout: 10
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.04 * baseline]
baseline: {SLIDING_WINDOW: 512, NUM_SPECULATIVE_TOKENS: 0, LM_HEAD_KEEPSET: 0}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128, default: 512}
  NUM_SPECULATIVE_TOKENS: {type: categorical, values: [0, 5], default: 0}
  LM_HEAD_KEEPSET: {type: categorical, values: [0, 2048, 8192, 16384], default: 0}
strategy: grid
verify: {top: 2, repeats: 2}
YAML
"$TUNER" sweep demo.yaml >demo.json 2>demo.err || { cat demo.err; fail "demo sweep failed"; }
"$TUNER" report demo >report.out 2>report.err || { cat report.err; fail "report of demo failed"; }
R=out/demo/report
[ "$(cat report.out)" = "$R/report.md" ] || fail "report printed '$(cat report.out)', want $R/report.md"
[ -s $R/report.md ] || fail "no report.md"
is_png $R/plot.png || fail "plot.png is not a PNG image"
for f in plot.gp feasible.dat over_budget.dat infinite.dat pareto.dat verified.dat chosen.dat baseline.dat; do
    [ -s $R/$f ] || fail "no $f"
done
md=$R/report.md
expect_contains $md "# Study \`demo\`"
expect_contains $md "34 runs of 32 points on the tuning prompts (8 feasible, 10 over a constraint, of which 6 with an infinite metric, 14 failed), 9 held-out"
expect_contains $md "Constraint \`ppl <= 1.04 * baseline\`: bound 2.392."
# the chosen point, as the manifest says, with measured and verified figures
tr -d '\t\n' <demo.json >demo.flat
point=$(json_field SLIDING_WINDOW <demo.flat | head -1)
[ -n "$point" ] || fail "no SLIDING_WINDOW in the manifest"
expect_contains $md "Chosen point (\`manifest.json\`): \`SLIDING_WINDOW=$point\`"
md_section $md Outcome | qgrep '^| measured | tune | 1 | '
md_section $md Outcome | qgrep '^| verified | holdout | 2 | '
md_section $md Outcome | qgrep '^| gap (verified / measured - 1) '
expect_contains $md "![tps against ppl](plot.png)"
# verification: 2 candidates + the baseline re-run, the winner marked
[ "$(md_section $md 'Measured against verified' | table_rows | wc -l)" -eq 3 ] ||
    fail "want 3 verification rows"
md_section $md 'Measured against verified' | qgrep 'meets the constraints (chosen) |$'
md_section $md 'Measured against verified' | qgrep '| (the baseline) | meets the constraints |$'
md_section $md 'Measured against verified' | qgrep '| [0-9.]*x \[[0-9.]*, [0-9.]*\], 2 pairs | meets the constraints'
# every point once; 8 crashed (W=256), 6 more garbage (S=8192)
[ "$(md_section $md 'Every point' | table_rows | wc -l)" -eq 32 ] || fail "want 32 point rows"
[ "$(md_section $md 'Every point' | table_rows | grep -c '| failed |')" -eq 14 ] || fail "want 14 failed rows"
md_section $md 'Every point' | qgrep '| infeasible | .*| 2048 | ppl is infinite'
md_section $md 'Every point' | qgrep '\*\*chosen\*\* |$'
md_section $md 'Every point' | qgrep '(baseline)'
# failures grouped by reason with the trial ids
md_section $md 'Failures and their reasons' | qgrep '^| 8 | failed: killed by signal 6'
md_section $md 'Failures and their reasons' | qgrep '^| 6 | failed: bad result: .*JSON'
md_section $md 'Failures and their reasons' | qgrep '^| 6 | infinite metric: ppl is infinite'
# knob importance: synth's ppl does not depend on K and the grid is balanced in K, so its
# eta^2 for ppl is exactly 0; the window moves both; keepset 2048 is infinite everywhere
eff=$(md_section $md 'How much each knob mattered')
echo "$eff" | qgrep '^| NUM_SPECULATIVE_TOKENS | 2 | 0\.[0-9]* | 0\.000 | 6 of 18 |'
echo "$eff" | qgrep '^| SLIDING_WINDOW | 3 | 0\.[0-9]* | 0\.[1-9]'
echo "$eff" | qgrep '^| LM_HEAD_KEEPSET | 3 | '
echo "$eff" | qgrep '^| LM_HEAD_KEEPSET | 2048 | 6 | [0-9.]* | - | 6 |'
# the plot's data: the chosen point is one row at the manifest's tps; a budget line at 2.392
[ "$(grep -vc '^#' $R/chosen.dat)" -eq 1 ] || fail "chosen.dat: want one row"
tps=$(json_field median <demo.flat | head -1)
awk -v t="$tps" '!/^#/ { d = $2 - t; if (d < 0) d = -d; exit !(d < 1e-6 * t) }' $R/chosen.dat ||
    fail "chosen.dat $(cat $R/chosen.dat) is not at tps $tps"
expect_contains $R/plot.gp "set arrow 1 from 2.392, graph 0 to 2.392, graph 1"
# the Pareto front: feasible points only, no point dominates another
awk '!/^#/ { x[n] = $1; y[n++] = $2 } END {
        for (i = 0; i < n; i++) for (j = 0; j < n; j++)
            if (i != j && x[j] <= x[i] && y[j] >= y[i] && (x[j] < x[i] || y[j] > y[i])) exit 1
        exit n < 1 }' $R/pareto.dat || fail "pareto.dat is not a front: $(cat $R/pareto.dat)"
# running it again rewrites the same folder
"$TUNER" report out/demo/ >/dev/null 2>&1 || fail "second report failed"
# noise and conditions: the baseline's 3 runs give the noise; each run records the load
md=$R/report.md
md_section $md 'Noise and machine conditions' | qgrep '^Noise: tps of the baseline over 3 runs: relative sd 0\.0 %\.$'
md_section $md 'Noise and machine conditions' | qgrep "^| load average (1 min) at the run's start | [0-9]* | .* | no |$"
head -1 out/demo/trials.jsonl | qgrep '"conditions":{"start":{"load1":[0-9.]*[,}].*"end":{"load1":[0-9.]*[,}]' ||
    fail "no load average in the journal line"
# a copy of the study whose runs saw a load rising with each line: plotted against it
mkdir -p varied && cp out/demo/study.json out/demo/space.json out/demo/manifest.json varied/
awk '{ sub(/"start":\{"load1":[0-9.]+/, "\"start\":{\"load1\":" NR); print }' out/demo/trials.jsonl >varied/trials.jsonl
"$TUNER" report varied >/dev/null 2>varied.err || { cat varied.err; fail "report of varied conditions failed"; }
expect_contains varied/report/report.md "![tps against the conditions](conditions.png)"
md_section varied/report/report.md 'Noise and machine conditions' | qgrep "^| load average (1 min) at the run's start | [0-9]* | [0-9]* | [0-9.]* | [0-9]* | yes |$"
is_png varied/report/conditions.png || fail "conditions.png is not a PNG image"
expect_contains $R/report.md "The conditions did not vary enough to plot against."

# 2. The same study interrupted before verification: no manifest, the report says why.
mkdir -p cut && cp out/demo/study.json out/demo/space.json cut/ && search_lines out/demo/trials.jsonl >cut/trials.jsonl
"$TUNER" report cut >/dev/null 2>cut.err || { cat cut.err; fail "report of an unverified study failed"; }
expect_contains cut/report/report.md "has not reached its held-out verification"
expect_contains cut/report/report.md "No held-out verification runs in this study."
[ ! -s cut/report/chosen.dat ] || [ "$(grep -vc '^#' cut/report/chosen.dat)" -eq 0 ] || fail "chosen point without a manifest"

# 3. No feasible point (sweep exit 3), with failures: still a report.
write_space tight.yaml <<'YAML'
engine: {command: [@ENGINE@], env: {SYNTH_CRASH_WHEN: SLIDING_WINDOW=128}, timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.5]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
YAML
rc=0
"$TUNER" sweep tight.yaml >/dev/null 2>tight.err || rc=$?
[ "$rc" -eq 3 ] || fail "tight: sweep exit $rc, want 3"
"$TUNER" report tight >/dev/null 2>tight.report.err || { cat tight.report.err; fail "report of tight failed"; }
md=out/tight/report/report.md
expect_contains $md "**No manifest**: no point met the constraints on the tuning prompts."
expect_contains $md "## Feasible Pareto front"$'\n\n'"No feasible point."
md_section $md 'Every point' | qgrep '| infeasible | .*ppl 2\.[0-9]* > bound 1\.5'
md_section $md 'Failures and their reasons' | qgrep '^| 1 | failed: '
is_png out/tight/report/plot.png || fail "tight: no plot"
expect_contains out/tight/report/plot.gp "budget: ppl <= 1.5"

# 4. Every run failed: the report lists the failures and draws an empty plot.
write_space crash.yaml <<'YAML'
engine: {command: [@ENGINE@], env: {SYNTH_CRASH_WHEN: always}, timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 3]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 256, step: 128}
strategy: grid
YAML
"$TUNER" sweep crash.yaml >/dev/null 2>&1 || true
"$TUNER" report crash >/dev/null 2>crash.err || { cat crash.err; fail "report of crash failed"; }
expect_contains out/crash/report/report.md "Fewer than 3 points produced a result (0)"
expect_contains out/crash/report/report.md "2 runs failed"
expect_contains out/crash/report/plot.gp "no point of this study produced a result"
is_png out/crash/report/plot.png || fail "crash: no plot"

# 5. No constraint: x is the point's number, no budget line.
write_space free.yaml <<'YAML'
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
parameters:
  NUM_SPECULATIVE_TOKENS: {type: int, min: 0, max: 4}
strategy: grid
verify: {top: 1, repeats: 1}
YAML
"$TUNER" sweep free.yaml >/dev/null 2>&1 || fail "free sweep failed"
"$TUNER" report free >/dev/null 2>free.err || { cat free.err; fail "report of free failed"; }
expect_contains out/free/report/report.md "## Every point, tps against point number"
! grep -q "set arrow" out/free/report/plot.gp || fail "a budget line without a constraint"
md_section out/free/report/report.md 'How much each knob mattered' | qgrep '^| NUM_SPECULATIVE_TOKENS | 5 | 1\.000 |'

# 5b. A relative bound re-based on the baseline's held-out re-run (its ppl is higher on the
#     held-out prompts): the plot draws the held-out budget as a line of its own.
write_space rebase.yaml <<'YAML'
engine:
  command: [@ENGINE@]
  env: {SYNTH_HOLDOUT_PPL_WHEN: SLIDING_WINDOW=512, SYNTH_HOLDOUT_PPL_DELTA: "0.5"}
  timeout: 10
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.04 * baseline]
baseline: {SLIDING_WINDOW: 512}
parameters:
  SLIDING_WINDOW: {type: int, min: 384, max: 512, step: 128, default: 512}
strategy: grid
verify: {top: 2, repeats: 1}
YAML
"$TUNER" sweep rebase.yaml >/dev/null 2>rebase.err || { cat rebase.err; fail "rebase sweep failed"; }
"$TUNER" report rebase >/dev/null 2>&1 || fail "report of rebase failed"
expect_contains out/rebase/report/plot.gp "set arrow 1 from 2.392, graph 0"
expect_contains out/rebase/report/plot.gp "held-out budget (bound 2.912)"
! grep -q "held-out budget" out/demo/report/plot.gp || fail "demo: a held-out budget line for an unmoved bound"

# 6. Errors: each names what is wrong and exits non-zero.
rc=0; "$TUNER" report nosuch >/dev/null 2>e1 || rc=$?
[ "$rc" -eq 1 ] || fail "missing study: exit $rc"
expect_contains e1 "no study folder out/nosuch"
cp -r out/tight torn
sed -i '2s/.*/{"id": broken/' torn/trials.jsonl
rc=0; "$TUNER" report torn >/dev/null 2>e2 || rc=$?
[ "$rc" -eq 1 ] || fail "damaged journal: exit $rc"
expect_contains e2 "torn/trials.jsonl"
cp -r out/demo badman && echo '[1, 2' >badman/manifest.json
rc=0; "$TUNER" report badman >/dev/null 2>e3 || rc=$?
[ "$rc" -eq 1 ] || fail "damaged manifest: exit $rc"
expect_contains e3 "badman/manifest.json: not a JSON object"
rm -rf out/free/report
rc=0; PATH=/nonexistent "$TUNER" report free >/dev/null 2>e4 || rc=$?
[ "$rc" -eq 1 ] || fail "no gnuplot: exit $rc"
expect_contains e4 "gnuplot was not found on PATH: install the Debian package gnuplot-nox"
[ -s out/free/report/report.md ] || fail "no gnuplot: report.md should still be written"
chmod a-w out/free/report 2>/dev/null
if [ "$(id -u)" != 0 ]; then
    rc=0; "$TUNER" report free >/dev/null 2>e5 || rc=$?
    [ "$rc" -eq 1 ] || fail "read-only report folder: exit $rc"
fi
chmod u+w out/free/report
rc=0; "$TUNER" report >/dev/null 2>e6 || rc=$?
[ "$rc" -eq 2 ] || fail "no study: exit $rc"
expect_contains e6 "no study given"
rc=0; "$TUNER" report demo --bogus >/dev/null 2>e7 || rc=$?
[ "$rc" -eq 2 ] || fail "bad option: exit $rc"
expect_contains e7 "unknown option --bogus"
"$TUNER" report --help | qgrep "usage: tuner report STUDY"
echo "test_report: ok"
