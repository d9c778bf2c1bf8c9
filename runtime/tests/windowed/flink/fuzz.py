#!/usr/bin/env python3
"""Random small configurations of the contract, run on Apache Flink 2.3
(run.sh) and on ../reference.py, compared line by line (for maintainers;
~7 s per configuration, one JVM at a time).

    python3 flink/fuzz.py N [SEED] [--focus]

--focus draws only session/tumbling/sliding windows with continuous-event or
count triggers (the merging-trigger paths). Prints one line per
configuration and exits non-zero if any differs (the input is kept then).
"""
import os
import random
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the test directory clean
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import reference  # noqa: E402


def config(rng, focus):
    kinds = ["session", "session", "tumbling", "sliding"] if focus else \
        ["tumbling", "sliding", "session", "count1", "count2"]
    kind = rng.choice(kinds)
    if kind == "tumbling":
        win = "tumbling:%d:%d" % (rng.randint(5, 40), rng.randint(-4, 4))
    elif kind == "sliding":
        sl = rng.randint(3, 15)
        win = "sliding:%d:%d" % (sl * rng.randint(1, 3) + rng.randint(0, 2), sl)
    elif kind == "session":
        win = "session:%d" % rng.randint(3, 20)
    elif kind == "count1":
        win = "count:%d" % rng.randint(1, 5)
    else:
        win = "count:%d:%d" % (rng.randint(1, 6), rng.randint(1, 4))
    if focus:
        trig = rng.choice(["continuous-event", "continuous-event", "count"])
    else:
        # continuous-event on count windows never ends (see README)
        trig = rng.choice([None, "count", "purging-count"]
                          + ([] if kind.startswith("count") else ["continuous-event"]))
    trigger = None
    if trig == "continuous-event":
        trigger = "continuous-event:%d" % rng.randint(2, 25)
    elif trig:
        trigger = "%s:%d" % (trig, rng.randint(1, 4))
    ev = rng.choice([None, None, "count", "time"])
    if ev == "count" and kind == "session":
        ev = "time"  # count evictor on merging windows: not modelled
    evictor = None
    if ev == "count":
        evictor = "count:%d" % rng.randint(1, 4)
    elif ev == "time":
        evictor = "time:%d" % rng.randint(0, 20)
    ooo, lateness = rng.randint(0, 15), rng.choice([0, 0, 3, 10, 30])
    keys = ["k%d" % j for j in range(rng.randint(1, 12))]
    base, lines = rng.randint(-100, 50), []
    for _ in range(rng.randint(20, 250)):
        base += rng.randint(0, 6)
        lag = rng.randint(0, ooo + 5) if rng.random() < 0.8 else rng.randint(0, 60)
        lines.append("%s,%d,%d" % (rng.choice(keys), base - lag, rng.randint(-50, 50)))
    return win, trigger, evictor, ooo, lateness, lines


def main():
    args = [a for a in sys.argv[1:] if a != "--focus"]
    focus = "--focus" in sys.argv
    n = int(args[0])
    seed = int(args[1]) if len(args) > 1 else 1
    tmp = tempfile.mkdtemp(prefix="windowed-fuzz-")
    bad = 0
    for i in range(n):
        rng = random.Random(seed * 1000 + i)
        win, trigger, evictor, ooo, lateness, lines = config(rng, focus)
        path = os.path.join(tmp, "case%d.csv" % i)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        cli = ["--window", win, "--out-of-orderness", str(ooo),
               "--allowed-lateness", str(lateness)]
        cli += ["--trigger", trigger] if trigger else []
        cli += ["--evictor", evictor] if evictor else []
        p = rng.choice(["1", "2"])
        assigner, trig, evic = reference.parse_setup(win, trigger, evictor)
        want = reference.run(reference.read_events(path), assigner, ooo, lateness, trig, evic)
        fl = subprocess.run([os.path.join(HERE, "run.sh"), "--input", path] + cli
                            + ["--parallelism", p], capture_output=True, text=True, timeout=300)
        got = sorted(fl.stdout.splitlines())
        ok = fl.returncode == 0 and got == want
        bad += not ok
        print("%s %s p=%s %s (%d lines)" % ("ok  " if ok else "DIFF", path, p,
                                            " ".join(cli), len(want)), flush=True)
        if ok:
            os.remove(path)
        else:
            sys.stderr.write(fl.stderr[-3000:])
    if not bad:
        os.rmdir(tmp)
    print("%d of %d configurations differ" % (bad, n))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
