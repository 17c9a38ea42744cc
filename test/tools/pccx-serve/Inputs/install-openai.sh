#!/bin/sh
# Installs OpenAI's `openai` npm client, pinned, into DIR (inside the build
# tree; nothing global). Kept between test runs. Usage: install-openai.sh DIR
set -eu
VERSION=4.104.0 # supports Debian 12's Node.js 18
DIR=$1
mkdir -p "$DIR"
# Tests that use it run in parallel: one installs, the others wait for it
# (the version check alone would pass while node_modules is half written).
exec 9> "$DIR/.install.lock"
flock 9
if [ -f "$DIR/node_modules/openai/package.json" ] &&
   grep -q "\"version\": \"$VERSION\"" "$DIR/node_modules/openai/package.json"; then
  exit 0
fi
mkdir -p "$DIR"
# npm needs a home for its cache; keep it in DIR when there is none.
export HOME="${HOME:-$DIR}"
timeout 300 npm install --prefix "$DIR" --no-audit --no-fund --no-save \
  --loglevel=error "openai@$VERSION" > "$DIR/npm-install.log" 2>&1 || {
  cat "$DIR/npm-install.log"; exit 1; }
