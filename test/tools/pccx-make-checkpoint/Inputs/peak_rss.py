"""Runs a command and reports its exit status and whether its peak resident
memory stayed under a limit.

Usage: peak_rss.py LIMIT_MIB COMMAND [ARG...]
"""
import resource
import subprocess
import sys

limit_mib = int(sys.argv[1])
status = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL).returncode
# ru_maxrss is in KiB on Linux: the largest of the waited-for children.
peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
if peak_mib < limit_mib:
    print("status %d, peak resident memory under %d MiB" % (status, limit_mib))
else:
    print("status %d, peak resident memory %.0f MiB, over %d MiB" %
          (status, peak_mib, limit_mib))
sys.exit(0 if status == 0 and peak_mib < limit_mib else 1)
