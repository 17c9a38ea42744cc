"""Checks the per-turn JSON of `pccx-run --chat --json` against the layout of
Gemma's chat template and the KV-cache carry-over between turns.

usage: check_chat.py TURNS.json BOS SOT EOT [--write-prompt N FILE]
SOT/EOT are the ids of <start_of_turn>/<end_of_turn>. With --write-prompt,
writes the whole token prompt of turn N (comma-separated) to FILE.
"""
import json
import sys

turns = [json.loads(line) for line in open(sys.argv[1])]
bos, sot, eot = (int(a) for a in sys.argv[2:5])


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


cached = []  # the tokens the KV cache holds after each turn
for t in turns:
    fed, reply = t["fed_tokens"], t["reply_tokens"]
    if t["reused_tokens"] != len(cached):
        fail("turn %d reused %d positions, %d were cached"
             % (t["turn"], t["reused_tokens"], len(cached)))
    prompt = cached + fed
    if t["prompt_tokens"] != len(prompt):
        fail("turn %d: prompt_tokens %d != %d" % (t["turn"], t["prompt_tokens"], len(prompt)))
    if t["turn"] == 1:
        if fed[:2] != [bos, sot]:
            fail("turn 1 does not start with <bos><start_of_turn>: %s" % fed[:2])
    elif eot not in fed or sot not in fed:
        fail("turn %d does not close the reply and open a turn: %s" % (t["turn"], fed))
    # The prompt ends with "<start_of_turn>model\n": the last SOT opens the
    # model's turn, after the user's closing <end_of_turn>.
    last_sot = len(prompt) - 1 - prompt[::-1].index(sot)
    if eot not in prompt[:last_sot] or sot in prompt[last_sot + 1:]:
        fail("turn %d does not end with the model's turn opening" % t["turn"])
    if t["turn"] > 1 and prompt.count(sot) != 2 * t["turn"]:
        fail("turn %d: %d <start_of_turn> markers in the history, want %d"
             % (t["turn"], prompt.count(sot), 2 * t["turn"]))
    if eot in reply[:-1]:
        fail("turn %d: generation went on after <end_of_turn>" % t["turn"])
    if t["ended_by"] == "end_of_turn" and reply[-1] != eot:
        fail("turn %d ended by end_of_turn without it" % t["turn"])
    # Every sampled token but the last is fed back.
    cached = prompt + reply[:-1]
    if t["position_after"] != len(cached):
        fail("turn %d: position %d, %d tokens cached" % (t["turn"], t["position_after"], len(cached)))
    if "--write-prompt" in sys.argv:
        n = int(sys.argv[sys.argv.index("--write-prompt") + 1])
        if t["turn"] == n:
            with open(sys.argv[sys.argv.index("--write-prompt") + 2], "w") as f:
                f.write(",".join(str(i) for i in prompt))
    print("turn %d: fed %d of %d prompt tokens, reply %d tokens (%s)"
          % (t["turn"], len(fed), len(prompt), len(reply), t["ended_by"]))
print("ok: %d turns" % len(turns))
