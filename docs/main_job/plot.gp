# plot.gp: written by `tuner report`; redraw with `gnuplot plot.gp` in this folder.
set terminal pngcairo size 1360,760 noenhanced font 'sans,11'
set output 'plot.png'
set title "study default-20261206-101442: tps against ppl, 30 points (26 feasible)"
set xlabel "ppl (median over repeats, tuning prompts)"
set ylabel "tps (median over repeats, higher is better)"
set grid
set key outside right top vertical box
set offsets 0, 0, graph 0.06, graph 0.06
set xrange [170.7911246:192.7034215]
set arrow 1 from 188.7795351, graph 0 to 188.7795351, graph 1 nohead lw 2 dt 2 lc rgb '#d62728'
set label 1 "budget: ppl <= 1.05 * baseline (bound 188.78)" at 188.7795351, graph 0.96 right offset -0.6,0 textcolor rgb '#d62728'
set arrow 2 from 189.8296777, graph 0 to 189.8296777, graph 1 nohead lw 2 dt 3 lc rgb '#ff7f0e'
set label 2 "held-out budget (bound 189.83)" at 189.8296777, graph 0.91 right offset -0.6,0 textcolor rgb '#ff7f0e'
set label 3 "ppl = inf" at 191.6257676, graph 0.04 center textcolor rgb '#9467bd'
plot 'infinite.dat' using 1:2 with points pt 2 ps 1.6 lw 2 lc rgb '#9467bd' title "ppl infinite (drawn at the right edge)", \
     'feasible.dat' using 1:2 with points pt 7 ps 1.3 lc rgb '#1f77b4' title "feasible", \
     'pareto.dat' using 1:2 with linespoints pt 7 ps 1.3 lw 2 lc rgb '#2ca02c' title "feasible Pareto front", \
     'verified.dat' using 1:2:3:4 with vectors head filled size screen 0.012,20 lw 2 lc rgb '#ff7f0e' title "measured -> verified on held-out prompts", \
     'verified_points.dat' using 1:2 with points pt 13 ps 1.6 lc rgb '#ff7f0e' title "verified (held-out median)", \
     'baseline.dat' using 1:2 with points pt 4 ps 2.5 lw 2 lc rgb '#000000' title "baseline", \
     'chosen.dat' using 1:2 with points pt 3 ps 3.5 lw 3 lc rgb '#d62728' title "chosen (manifest)"
