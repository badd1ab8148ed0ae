#!/bin/sh
# The version the programs say (--version, reports, /api/v1/version): the release in the file
# VERSION, and the commit it was built from when this is a git checkout: 0.9.0+g25c6e80
# (-dirty with local changes).  A tag naming exactly that release gives just 0.9.0.
cd "$(dirname "$0")/.." || exit 1
v=$(cat VERSION 2>/dev/null || echo 0.0.0)
g=$(git describe --tags --always --dirty 2>/dev/null)
case "$g" in
"" | "v$v" | "$v") echo "$v" ;;
*) echo "$v+g${g#g}" ;;
esac
