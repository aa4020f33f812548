#!/usr/bin/env bash
# Keeps docs/cli.md in step with the command line (issue #13): for `tune` and every subcommand
# (found recursively in the "Subcommands:" sections of --help), every option named in the
# "Options:" section of `tune ... --help` must be mentioned in docs/cli.md, and so must the
# subcommand itself ("tune costmodel train"). Prints what is missing and exits 1; 0 when complete.
# Usage: cli_docs_test.sh PATH/TO/tune
set -uo pipefail
tune=${1:?usage: cli_docs_test.sh PATH/TO/tune}
root=$(cd "$(dirname "$0")/../.." && pwd)
doc=$root/docs/cli.md
[ -x "$tune" ] || { echo "cli_docs_test: not an executable: $tune"; exit 1; }
[ -f "$doc" ] || { echo "cli_docs_test: missing $doc"; exit 1; }

failures=0
options_checked=0
commands_checked=0

# The lines of section $1 ("Options", "Subcommands") of a --help text on stdin.
section() {
  awk -v want="$1:" '/^[A-Za-z]+:$/ { sec = $0; next } sec == want { print }'
}

check() {  # $@: the subcommand path ("" for tune itself)
  local help opts subs o s label
  label="tune${*:+ $*}"
  commands_checked=$((commands_checked + 1))
  if ! help=$("$tune" "$@" --help 2>&1); then
    echo "FAIL: '$label --help' exited with a non-zero status"
    failures=$((failures + 1))
    return
  fi
  if [ $# -gt 0 ] && ! grep -qF -- "$label" "$doc"; then
    echo "missing in docs/cli.md: the command '$label'"
    failures=$((failures + 1))
  fi
  # Option declarations are the first field of the indented lines that start with '-'
  # ("-o,--output", "--no-default{false}"); descriptions are not read.
  opts=$(section Options <<<"$help" | awk '/^ +-/ { print $1 }' \
         | grep -oE -- '--[A-Za-z0-9][A-Za-z0-9-]*' | sort -u)
  for o in $opts; do
    options_checked=$((options_checked + 1))
    if ! grep -qE -- "${o}([^A-Za-z0-9-]|\$)" "$doc"; then
      echo "missing in docs/cli.md: option $o of '$label'"
      failures=$((failures + 1))
    fi
  done
  subs=$(section Subcommands <<<"$help" | awk '/^  [A-Za-z]/ { print $1 }')
  for s in $subs; do
    check "$@" "$s"
  done
}

check
if [ "$commands_checked" -lt 2 ] || [ "$options_checked" -lt 10 ]; then
  echo "FAIL: parsed only $commands_checked commands and $options_checked options from --help (format changed?)"
  exit 1
fi
if [ "$failures" -gt 0 ]; then
  echo "FAIL: $failures item(s) of --help missing from docs/cli.md"
  exit 1
fi
echo "ok: $commands_checked commands, $options_checked options of --help all in docs/cli.md"
