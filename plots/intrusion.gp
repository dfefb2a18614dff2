# intrusion.gp - tracing intrusion: two panels, run time relative to the
# untraced run and abort rate, per workload, for the levels off / tx / all,
# each bar the median with a min..max error bar.
# Input (-e): in = TSV with columns workload, then for each level
# (off, tx, all) time median/min/max relative to off's median, then for each
# level abort rate median/min/max in %; out, w, h.
load dir."/common.gp"
if (!exists("w")) w = 1200
if (!exists("h")) h = 900
set style data histograms
set style histogram errorbars gap 1 lw 1.5
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.9
set key top left noenhanced
set xtics noenhanced
do for [ext in "png svg"] {
    eval(ext eq "png" ? term_png(w, h) : term_svg(w, h))
    set output out.".".ext
    set multiplot layout 2,1 title "Tracing intrusion (median of repetitions, bars = min..max)" font ",14"
    set title "Time per operation relative to untraced" noenhanced
    set ylabel "time per op / untraced median (ratio)"
    set yrange [0:*]
    set offsets 0, 0, graph 0.15, 0
    plot in using 2:3:4:xtic(1) title "untraced (off)" lc rgb c_off, \
         "" using 5:6:7 title "tx events" lc rgb c_tx, \
         "" using 8:9:10 title "all events" lc rgb c_all, \
         1 notitle with lines dt 2 lc rgb "#555555"
    set title "Abort rate" noenhanced
    set ylabel "aborts / (commits + aborts) (%)"
    plot in using 11:12:13:xtic(1) title "untraced (off)" lc rgb c_off, \
         "" using 14:15:16 title "tx events" lc rgb c_tx, \
         "" using 17:18:19 title "all events" lc rgb c_all
    unset multiplot
    set output
}
