"""pccx-run --json-schema and --json-object: for each schema of
json_subset.SCHEMAS and any object, greedy and four seeded sampled replies;
every reply that ends is a document that parses and validates, and one cut
by --max-new-tokens says so. Then a chat of three turns under one schema:
each turn's reply is a document of its own. Prints a line per check.

usage: check_json_output.py BUNDLE WORKDIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from json_subset import SCHEMAS, validates  # noqa: E402

bundle, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
cases = list(SCHEMAS.items()) + [("any object", None)]
for name, schema in cases:
    args = ["--json-object"]
    if schema is not None:
        path = os.path.join(work, name.replace(" ", "-") + ".json")
        with open(path, "w") as f:
            json.dump(schema, f)
        args = ["--json-schema", path]
    ended = valid = 0
    for seed in [None, 1, 2, 3, 4]:
        sampling = ["--temperature", "1", "--seed", str(seed)] if seed else []
        run = subprocess.run(["pccx-run", bundle, "--prompt", "Answer in JSON:",
                              "--max-new-tokens", "160"] + args + sampling,
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            sys.exit("%s: pccx-run failed: %s" % (name, run.stderr))
        if "json mask:" not in run.stderr:
            sys.exit("%s: no mask cost line" % name)
        if "incomplete" in run.stderr:
            continue
        ended += 1
        text = run.stdout.rstrip("\n")
        try:
            value = json.loads(text)
        except ValueError as e:
            sys.exit("%s: reply does not parse (%s): %r" % (name, e, text))
        if schema is None and not isinstance(value, dict):
            sys.exit("%s: not an object: %r" % (name, text))
        if schema is not None and not validates(value, schema):
            sys.exit("%s: reply does not validate: %r" % (name, text))
        valid += 1
    print("%s: %d of 5 ended, all %d valid" % (name, ended, valid))

# A chat: each turn's reply is one document.
turns = os.path.join(work, "turns.txt")
with open(turns, "w") as f:
    f.write("Who are you?\nAnd your friend?\nAnd the third?\n")
run = subprocess.run(["pccx-run", bundle, "--chat-file", turns, "--json-schema",
                      os.path.join(work, "person.json"), "--max-new-tokens", "120",
                      "--temperature", "1", "--seed", "2", "--json"],
                     capture_output=True, text=True, timeout=120)
if run.returncode != 0:
    sys.exit("chat: pccx-run failed: %s" % run.stderr)
records = [json.loads(line) for line in run.stdout.splitlines()]
ended = [r for r in records if r["json_complete"]]
for r in ended:
    if not validates(json.loads(r["reply_text"]), SCHEMAS["person"]):
        sys.exit("chat: reply does not validate: %r" % r["reply_text"])
print("chat: %d turns, %d complete, all valid" % (len(records), len(ended)))
