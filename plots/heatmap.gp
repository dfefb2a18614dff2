# heatmap.gp - the conflict matrix: victim site (rows) x culprit site
# (columns), colour = number of aborts, the count printed in each cell.
# Input (-e): in = TSV, one row per cell: column index, row index, count,
# culprit label, victim label (every pair present, zeros included); n = rows,
# m = columns; vmax = largest count (white text above 60 % of it); out; ttl;
# w, h. Cells are boxes, so a 1 x 1 matrix draws too.
load dir."/common.gp"
if (!exists("w")) w = 900 + 60 * m
if (!exists("h")) h = 450 + 50 * n
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
set style fill solid 1.0 border rgb "#ffffff"
unset key
do for [ext in "png svg"] {
    eval(ext eq "png" ? term_png(w, h) : term_svg(w, h))
    set output out.".".ext
    plot in using 1:2:($1 - 0.5):($1 + 0.5):($2 - 0.5):($2 + 0.5):3:xtic(4):ytic(5) \
             with boxxyerror fc palette, \
         "" using 1:2:(sprintf("%d", $3)):($3 > 0.6 * vmax ? 0xffffff : 0x000000) \
             with labels font ",10" tc rgb variable
    set output
}
