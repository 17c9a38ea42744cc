#!/bin/sh
# curl requests for the chat page against a pccx-serve started with
# --api-key s3cret (see webui.test).
set -u
tmp=$1 # where files go (the test's %t)
curl="curl -sS --max-time 30"

echo "== page without the key"
$curl -D "$tmp.head" -o "$tmp.page" -w "%{http_code} %{content_type}\n" "$PCCX_URL/"
tr -d '\r' < "$tmp.head" | grep -i '^Content-Security-Policy:'
grep -e '<!DOCTYPE html>' -e '<meta name="viewport"' -e '<title>' -e "fetch('v1/chat/completions'" "$tmp.page" | sed 's/^ *//; s/, {$//'

echo "== HEAD of the page"
$curl -I -o /dev/null -w "%{http_code}\n" "$PCCX_URL/"

echo "== the API without the key"
$curl -o /dev/null -w "%{http_code}\n" "$PCCX_URL/v1/models"
$curl -o /dev/null -w "%{http_code}\n" "$PCCX_URL/v1/model-card"

echo "== the API with the key"
$curl -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer s3cret" "$PCCX_URL/v1/models"

echo "== model card"
$curl -o "$tmp.card" -w "%{http_code} %{content_type}\n" -H "Authorization: Bearer s3cret" "$PCCX_URL/v1/model-card"
head -2 "$tmp.card"

echo "== only / is the page"
$curl -o /dev/null -w "%{http_code}\n" "$PCCX_URL/index.html"
