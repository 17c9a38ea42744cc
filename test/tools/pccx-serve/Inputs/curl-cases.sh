#!/bin/sh
# curl requests against $PCCX_URL (see with_server.py); each prints its body
# and HTTP status.
set -u
c() { curl -sS --max-time 30 -w ' %{http_code}\n' "$@"; echo; }
post() { path=$1; shift; c -H 'Content-Type: application/json' "$PCCX_URL$path" "$@"; }

echo "== health"; c "$PCCX_URL/health"
echo "== models"; c "$PCCX_URL/v1/models"; c "$PCCX_URL/v1/models/tiny"
echo "== completion"
post /v1/completions -d '{"model": "tiny", "prompt": "Hello there", "max_tokens": 5, "temperature": 0}'
echo "== completion (token ids, seeded)"
post /v1/completions -d '{"prompt": [2, 100, 200], "max_tokens": 3, "temperature": 0.8, "seed": 7}'
echo "== same seed, same text"
# (The usage differs: the second finds more of its prompt in the cache.)
a=$(post /v1/completions -d '{"prompt": "Hi", "max_tokens": 6, "temperature": 0.9, "seed": 11}' | sed 's/"created":[0-9]*,"id":"cmpl-[0-9]*"//; s/"cached_tokens":[0-9]*//')
b=$(post /v1/completions -d '{"prompt": "Hi", "max_tokens": 6, "temperature": 0.9, "seed": 11}' | sed 's/"created":[0-9]*,"id":"cmpl-[0-9]*"//; s/"cached_tokens":[0-9]*//')
[ "$a" = "$b" ] && echo same || echo "different: $a / $b"
echo "== chat"
post /v1/chat/completions -d '{"model": "tiny", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}], "max_tokens": 4}'
echo "== chat stream"
post /v1/chat/completions -N -d '{"model": "tiny", "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}], "max_tokens": 4, "stream": true, "stream_options": {"include_usage": true}}'
echo "== stream content type"
curl -sS --max-time 30 -o /dev/null -w '%{content_type}\n' -H 'Content-Type: application/json' "$PCCX_URL/v1/chat/completions" -d '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "stream": true}'
echo "== bad json"; post /v1/chat/completions -d '{"model": "tiny", "messages": ['
echo "== not an object"; post /v1/completions -d '[1, 2]'
echo "== max_tokens over the limit"; post /v1/completions -d '{"prompt": "Hi", "max_tokens": 100}'
echo "== max_tokens past the context"; post /v1/completions -d '{"prompt": "Hi", "max_tokens": 64, "stop": ["x"]}' >/dev/null
post /v1/completions -d "{\"prompt\": [$(seq -s, 100 200)], \"max_tokens\": 64}"
echo "== context exceeded"; post /v1/completions -d "{\"prompt\": [$(seq -s, 100 230)], \"max_tokens\": 1}"
echo "== unknown model"
post /v1/chat/completions -d '{"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}'
c "$PCCX_URL/v1/models/gpt-4o"
echo "== unknown route"; post /v1/embeddings -d '{}'
echo "== wrong method"; c "$PCCX_URL/v1/completions"
echo "== body too large"
post /v1/completions -d "{\"prompt\": \"$(head -c 5000 /dev/zero | tr '\0' a)\"}"
echo "== wrong types"
post /v1/completions -d '{"prompt": "Hi", "temperature": "hot"}'
post /v1/chat/completions -d '{"messages": [{"role": "robot", "content": "Hi"}]}'
post /v1/chat/completions -d '{"messages": [{"role": "user", "content": "Hi"}, {"role": "user", "content": "Hi"}]}'
post /v1/completions -d '{"prompt": "Hi", "n": 9}'
post /v1/completions -d '{"prompt": "Hi", "logit_bias": {"5": 1}}'
post /v1/completions -d '{"prompt": [2, 99999]}'
echo "== a conversation resent with one more turn reuses the KV cache"
first=$(post /v1/chat/completions -d '{"messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 6, "temperature": 0}')
echo "$first" | grep -o '"cached_tokens":[0-9]*'
answer=$(echo "$first" | python3 -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.read().rsplit(" ", 1)[0])["choices"][0]["message"]["content"]))')
post /v1/chat/completions -d "{\"messages\": [{\"role\": \"user\", \"content\": \"Hello there\"}, {\"role\": \"assistant\", \"content\": $answer}, {\"role\": \"user\", \"content\": \"And then?\"}], \"max_tokens\": 6, \"temperature\": 0}" | grep -o '"cached_tokens":[0-9]*'
echo "== stop strings"
python3 "$(dirname "$0")/stop_strings.py"
echo "== concurrent requests, answered one at a time"
dir=$(mktemp -d)
for i in 1 2 3; do
  post /v1/chat/completions -d '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 20}' > "$dir/$i" &
done
wait
for i in 1 2 3; do grep -o '"object":"chat.completion".* 200' "$dir/$i" | sed 's/,"usage".*//; s/"object"://'; done
rm -rf "$dir"
echo "== still healthy"; c "$PCCX_URL/health"
