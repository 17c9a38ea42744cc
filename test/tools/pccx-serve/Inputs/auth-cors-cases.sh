#!/bin/sh
# curl requests against a pccx-serve started with --api-key-file (key
# "s3cret") and --cors-origin http://a.example (see auth-cors.test); each
# prints the status, the headers named after it, and the body.
set -u
# show HEADER... -- CURL ARGS: the status, those response headers, the body.
show() {
  names=""
  while [ "$1" != "--" ]; do names="$names $1"; shift; done
  shift
  out=$(curl -sS --max-time 30 -D - "$@")
  echo "$out" | head -1 | tr -d '\r'
  for n in $names; do
    echo "$out" | tr -d '\r' | grep -i "^$n:" || echo "$n: (none)"
  done
  echo "$out" | tr -d '\r' | sed -n '/^$/,$p' | sed '/^$/d'
}
chat='{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}'

echo "== no key"
show WWW-Authenticate -- "$PCCX_URL/v1/chat/completions" -H 'Content-Type: application/json' -d "$chat"
echo "== wrong key"
show WWW-Authenticate -- "$PCCX_URL/v1/models" -H 'Authorization: Bearer nope'
echo "== right key"
show -- "$PCCX_URL/v1/models" -H 'Authorization: Bearer s3cret'
show -- "$PCCX_URL/v1/chat/completions" -H 'Authorization: Bearer s3cret' -H 'Content-Type: application/json' -d "$chat" | grep -o '"object":"chat.completion"'
echo "== health needs no key"
show -- "$PCCX_URL/health"
echo "== preflight (without the key: browsers send none)"
show Access-Control-Allow-Origin Access-Control-Allow-Methods Access-Control-Allow-Headers -- \
  -X OPTIONS "$PCCX_URL/v1/chat/completions" -H 'Origin: http://a.example' \
  -H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: authorization,content-type'
echo "== allowed origin, streamed"
show Access-Control-Allow-Origin -- -N "$PCCX_URL/v1/chat/completions" -H 'Origin: http://a.example' \
  -H 'Authorization: Bearer s3cret' -H 'Content-Type: application/json' \
  -d '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "stream": true}' | sed -n '1,2p;$p'
echo "== allowed origin, refused field"
show Access-Control-Allow-Origin -- "$PCCX_URL/v1/chat/completions" -H 'Origin: http://a.example' \
  -H 'Authorization: Bearer s3cret' -H 'Content-Type: application/json' \
  -d '{"messages": [{"role": "user", "content": "Hi"}], "logit_bias": {"5": 1}}'
echo "== other origin"
show Access-Control-Allow-Origin -- "$PCCX_URL/v1/models" -H 'Origin: http://evil.example' -H 'Authorization: Bearer s3cret'
