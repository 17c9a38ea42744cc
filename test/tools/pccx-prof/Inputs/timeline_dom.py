"""Reads the DOM of a pccx-prof --report page after its script ran
(chromium --dump-dom) and prints what the timeline shows: the zoom, the
view's label, the axis labels, and per lane the boxes drawn and their
categories.

usage: timeline_dom.py DOM.html
"""
import re
import sys

dom = open(sys.argv[1], encoding="utf-8").read()
zoom = re.search(r'<svg id="tl-svg"[^>]*data-zoom="([^"]+)"', dom)
print("zoom", zoom.group(1) if zoom else "none (the script did not run)")
view = re.search(r'<span id="tl-view">([^<]*)</span>', dom)
print("view", view.group(1) if view else "none")
axis = re.search(r'<g id="tl-axis">(.*?)</g>', dom, re.S)
print("axis", " | ".join(re.findall(r"<text[^>]*>([^<]*)</text>", axis.group(1))))
for lane, body in re.findall(r'<g data-lane="(\d+)">(.*?)</g>', dom, re.S):
    titles = re.findall(r"<title>([^<]*)</title>", body)
    print("lane %s: %d boxes %s" % (lane, len(titles), " ".join(sorted(set(titles)))))
legend = re.search(r'<div class="legend" id="legend">(.*?)</div>\s*</div>', dom, re.S)
if legend:
    for name in re.findall(r'<span class="family-name"[^>]*>([^<]*)</span>', dom):
        print("family", name.replace("&amp;", "&"))
