# bars.gp - a clustered bar chart: one cluster per row, one bar per column.
# Input (-e): in = TSV file, header row = series names, column 1 = cluster
# label ("\n" allowed); ncol = number of columns; out = output path without
# extension; ttl, ylab, xlab; logy = 1 for a log y axis; w, h = size in px.
# Never computes anything: tmplot prepares the table.
load dir."/common.gp"
if (!exists("logy")) logy = 0
if (!exists("w")) w = 1200
if (!exists("h")) h = 650
if (!exists("xlab")) xlab = ""
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.9
set title ttl noenhanced font ",14"
set ylabel ylab noenhanced
set xlabel xlab noenhanced offset 0,-1.5
set bmargin 6
set key outside top center horizontal noenhanced
set xtics noenhanced
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
palette_c(i) = word(colours, i)
vlabel(v) = (v != v ? "" : v == 0 ? "0" : abs(v) >= 1e6 ? sprintf("%.3gM", v / 1e6) : abs(v) >= 10000 ? sprintf("%.0fk", v / 1000) : abs(v) >= 100 ? sprintf("%.0f", v) : sprintf("%.2g", v))
# On a log axis a zero has no height: its label sits on the axis floor.
yfloor = 0.5
ypos(v) = (logy && v <= yfloor ? yfloor : v)
if (logy) { set logscale y; set yrange [yfloor:*] }
if (!exists("labels")) labels = 1
if (!exists("colours")) colours = "#c0392b #2e86c1 #27ae60 #e67e22 #8e44ad #7f8c8d"
do for [ext in "png svg"] {
    eval(ext eq "png" ? term_png(w, h) : term_svg(w, h))
    set output out.".".ext
    # Each bar also carries its value, so that a zero still shows as "0".
    plot for [i=2:ncol] in using i:xtic(1) title columnheader(i) lc rgb palette_c(i-1), \
         for [i=2:ncol] in using ($0 + (i - 2 - (ncol - 2) / 2.0) / ncol):(ypos(column(i))):(vlabel(column(i))) \
             with labels offset 0,0.6 font ",8" notitle
    set output
}
