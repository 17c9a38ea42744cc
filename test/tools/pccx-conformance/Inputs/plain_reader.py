"""Reads a conformance suite with nothing but the Python standard library,
as a Verilator or cocotb testbench would, checks that every file agrees
with its manifest, and writes a results directory from the expected state
(standing in for a testbench that met it), optionally with one lane of one
vector's L2 changed.

usage: plain_reader.py SUITE RESULTS [VECTOR WORD LANE VALUE]
"""
import os
import sys


def read_hex(path):
    mem, addr = {}, 0
    with open(path) as f:
        for line in f:
            for tok in line.split("//")[0].split():
                if tok.startswith("@"):
                    addr = int(tok[1:], 16)
                else:
                    mem[addr] = int(tok, 16)
                    addr += 1
    return mem


def write_hex(path, mem, width):
    with open(path, "w") as f:
        last = None
        for addr in sorted(mem):
            if last is None or addr != last + 1:
                f.write("@%05x\n" % addr)
            f.write("%0*x\n" % (width, mem[addr]))
            last = addr


def manifest(path):
    keys = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                key, _, value = line.partition(" ")
                keys[key] = value
    return keys


suite, results = sys.argv[1], sys.argv[2]
change = sys.argv[3:]
names = [l.split()[1] for l in open(os.path.join(suite, "index.txt"))
         if l.startswith("vector ")]
os.makedirs(results, exist_ok=True)
instructions = 0
for name in names:
    d = os.path.join(suite, name)
    m = manifest(os.path.join(d, "vector.txt"))
    prog_file, prog_words = m["program"].split()
    program = read_hex(os.path.join(d, prog_file))
    assert len(program) == int(prog_words), name
    assert all(w < 2**64 for w in program.values()), name
    weights_file, weight_bytes = m["weights"].split()
    beats = read_hex(os.path.join(d, weights_file))
    assert len(beats) * 16 == int(weight_bytes), name
    for key in ("init_l2", "init_host", "expect_l2", "expect_host"):
        assert all(w < 2**128 for w in read_hex(os.path.join(d, m[key])).values())
    for line in open(os.path.join(d, m["expect_consts"])):
        fields = line.split("//")[0].split()
        if fields:
            assert fields[0] in ("fmap_shape", "weight_shape") and len(fields) == 5
    instructions += len(program)

    out = os.path.join(results, name)
    os.makedirs(out, exist_ok=True)
    l2 = read_hex(os.path.join(d, m["expect_l2"]))
    if change and change[0] == name:
        word, lane, value = int(change[1], 16), int(change[2]), int(change[3], 16)
        old = l2.get(word, 0)
        l2[word] = old & ~(0xFFFF << (16 * lane)) | value << (16 * lane)
    write_hex(os.path.join(out, "l2.hex"), l2, 32)
    with open(os.path.join(out, "vector.txt"), "w") as f:
        f.write("expect_status %s\n" % m["expect_status"])
        f.write("expect_l2 l2.hex\n")
        f.write("expect_emax %s\n" % m["expect_emax"])
print("read %d vectors, %d instruction words" % (len(names), instructions))
