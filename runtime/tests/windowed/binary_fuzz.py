#!/usr/bin/env python3
"""Random small configurations of the contract (the generator of flink/fuzz.py: every
window kind, trigger and evictor, out-of-order and late records), run on the
`windowed_aggregate` binary and on reference.py (which agrees with Apache Flink 2.3
on them), compared line by line, at parallelism 1 and 2 (for maintainers).

    python3 binary_fuzz.py BINARY N [SEED] [--state heap|rocksdb]

Exits non-zero if any configuration differs (its input is kept then).
"""
import os
import random
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the test directory clean
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "flink"))
import fuzz  # noqa: E402  (flink/fuzz.py: config())


def main():
    args = [a for a in sys.argv[1:]]
    state = "heap"
    if "--state" in args:
        i = args.index("--state")
        state = args[i + 1]
        del args[i:i + 2]
    binary, n = args[0], int(args[1])
    seed = int(args[2]) if len(args) > 2 else 1
    tmp = tempfile.mkdtemp(prefix="windowed-binary-fuzz-")
    bad = 0
    for i in range(n):
        rng = random.Random(seed * 1000 + i)
        win, trigger, evictor, ooo, lateness, lines = fuzz.config(rng, i % 3 == 0)
        path = os.path.join(tmp, "case%d.csv" % i)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        cli = ["--window", win, "--out-of-orderness", str(ooo), "--allowed-lateness", str(lateness)]
        if trigger:
            cli += ["--trigger", trigger]
        if evictor:
            cli += ["--evictor", evictor]
        want = subprocess.run([sys.executable, os.path.join(HERE, "reference.py"), "--input", path] + cli,
                              capture_output=True, text=True, check=True).stdout
        for p in ("1", "2"):
            got = subprocess.run([binary, "--input", path] + cli + ["--parallelism", p, "--state", state],
                                 capture_output=True, text=True)
            out = "".join(l + "\n" for l in sorted(got.stdout.splitlines()))
            if got.returncode != 0 or out != want:
                bad += 1
                print("DIFF case%d p%s: %s (kept in %s)\n%s" % (i, p, " ".join(cli), tmp, got.stderr[-500:]))
    print("%d configurations, %d differ" % (n, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
