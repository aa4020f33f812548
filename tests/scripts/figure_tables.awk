# Prints "FILE:LINE" of every figure table (a markdown table with a decimal number in its body)
# whose section (since the last heading) names no command before it, nor within 6 lines after it.
function is_cmd(s) {
  return s ~ /`(\.\/)?(tune|build\/|experiments\/|scripts\/|sh |bash |python3|ctest|datasets\/[^`]*\.sh)/ ||
         s ~ /# command:/ || tolower(s) ~ /no reproducing command/
}
{ line[NR] = $0 }
END {
  cmd_in_section = 0
  for (i = 1; i <= NR; ++i) {
    if (line[i] ~ /^#/) { cmd_in_section = 0; continue }
    if (line[i] !~ /^\|/) { if (is_cmd(line[i])) cmd_in_section = 1; continue }
    start = i; fig = 0
    for (; i <= NR && line[i] ~ /^\|/; ++i) {
      row = line[i]; gsub(/`[^`]*`/, "", row)  # option defaults in code spans are not figures
      if (i > start + 1 && row ~ /\|[^|]*[0-9]+\.[0-9]+[^|]*\|/) fig = 1
      if (is_cmd(line[i])) cmd_in_section = 1
    }
    after = 0
    for (j = i; j <= NR && j < i + 6 && line[j] !~ /^#/; ++j) if (is_cmd(line[j])) after = 1
    if (line[start] ~ /^\| *option *\|/) fig = 0  # option reference tables (docs/cli.md)
    if (fig && !cmd_in_section && !after) print FILENAME ":" start
    i--
  }
}
