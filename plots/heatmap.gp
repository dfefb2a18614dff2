# heatmap.gp - the conflict matrix: victim site (rows) x culprit site
# (columns), colour = number of aborts, the count printed in each cell.
# Input (-e): in = TSV matrix with a header row of culprit labels and a first
# column of victim labels; n = rows, m = columns; out; ttl; w, h.
load dir."/common.gp"
if (!exists("w")) w = 900 + 40 * m
if (!exists("h")) h = 500 + 40 * n
set title ttl noenhanced font ",14"
set xlabel "culprit site (committed the conflicting write)"
set ylabel "victim site (aborted)"
set xtics rotate by -30 noenhanced
set ytics noenhanced
set palette defined (0 "#fff7ec", 1 "#fdbb84", 2 "#e34a33", 3 "#7f0000")
set cblabel "aborts"
set cbrange [0:*]
set xrange [-0.5:m - 0.5]
set yrange [-0.5:n - 0.5]
set grid noxtics noytics
unset key
do for [ext in "png svg"] {
    eval(ext eq "png" ? term_png(w, h) : term_svg(w, h))
    set output out.".".ext
    plot in matrix rowheaders columnheaders using 1:2:3 with image, \
         "" matrix rowheaders columnheaders using 1:2:(sprintf("%d", $3)) with labels font ",10"
    set output
}
