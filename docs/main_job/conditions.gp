# conditions.gp: written by `tuner report`; redraw with `gnuplot conditions.gp` in this folder.
set terminal pngcairo size 420,420 noenhanced
set output 'conditions.png'
set datafile missing 'NaN'
set grid
unset key
set multiplot layout 1,1
set xlabel "load average (1 min) at the run's start"
set ylabel "tps"
plot 'conditions.dat' using 1:4 with points pt 7 ps 0.6 lc rgb '#1f77b4'
unset multiplot
