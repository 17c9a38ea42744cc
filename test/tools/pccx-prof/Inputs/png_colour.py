"""Counts the pixels of a PNG that have one colour.

usage: png_colour.py FILE.png [--distinct] RRGGBB ...
Prints 'WIDTHxHEIGHT' and then, per colour, 'RRGGBB: N pixels'; with
--distinct first 'N distinct colours' (colours of at least 20 pixels, so
that anti-aliased edges do not count). Reads 8-bit RGB or RGBA PNGs (what
a headless browser's screenshot is).
"""
import struct
import sys
import zlib

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height, depth, colour = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
assert depth == 8 and colour in (2, 6), "unsupported PNG format"
bpp = 3 if colour == 2 else 4
raw = zlib.decompress(idat)
stride = width * bpp
rows, prev, i = [], bytes(stride), 0
for _ in range(height):
    kind, line = raw[i], raw[i + 1:i + 1 + stride]
    i += 1 + stride
    if kind == 2:
        line = bytes([(x + y) & 255 for x, y in zip(line, prev)])
    elif kind in (1, 3, 4):
        out = bytearray(line)
        for x in range(stride):
            a = out[x - bpp] if x >= bpp else 0
            if kind == 1:
                out[x] = (out[x] + a) & 255
                continue
            b = prev[x]
            if kind == 3:
                out[x] = (out[x] + ((a + b) >> 1)) & 255
                continue
            c = prev[x - bpp] if x >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            out[x] = (out[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        line = bytes(out)
    rows.append(line)
    prev = line
print("%dx%d" % (width, height))
colours = sys.argv[2:]
if colours[:1] == ["--distinct"]:
    colours = colours[1:]
    counts = {}
    for row in rows:
        for x in range(0, len(row), bpp):
            pixel = row[x:x + 3]
            counts[pixel] = counts.get(pixel, 0) + 1
    print("%d distinct colours" % sum(1 for n in counts.values() if n >= 20))
for hexcolour in colours:
    want = bytes.fromhex(hexcolour)
    count = 0
    for row in rows:
        start = row.find(want)
        while start >= 0:
            if start % bpp == 0:
                count += 1
            start = row.find(want, start + 1)
    print("%s: %d pixels" % (hexcolour, count))
