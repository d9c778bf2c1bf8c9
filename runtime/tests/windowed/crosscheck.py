#!/usr/bin/env python3
"""Cross-check for reference.py (not needed to run the tests).

A second, deliberately differently structured formulation of the same
semantics: no timers, no MergingWindowSet/state-window indirection; after
each watermark advance it scans all live windows ("fire if the watermark
just passed maxTimestamp, drop if it passed the cleanup time"), and session
windows are merged directly by overlap/touch. It only shares argument and
input parsing with reference.py.

    python3 crosscheck.py          # compare against every *.expected (cases with
                                   # --trigger, --evictor or count windows skipped)
    python3 crosscheck.py --fuzz N # N random small configurations vs reference.py
"""
import os
import sys
sys.dont_write_bytecode = True  # keep the test directory clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import read_events, parse_window, SessionAssigner, I64_MIN, I64_MAX

def naive(events, spec, ooo, L):
    asg = parse_window(spec)
    out = []; W = I64_MIN; mx = None
    cl = lambda e: min(e - 1 + L, I64_MAX)
    if isinstance(asg, SessionAssigner):
        g = asg.gap
        sess = {}  # key -> list of [s,e,c,sum]
        for k, ts, a in events:
            lst = sess.setdefault(k, [])
            s, e = ts, ts + g
            hit = [w for w in lst if w[0] <= e and w[1] >= s]
            ns = min([s] + [w[0] for w in hit]); ne = max([e] + [w[1] for w in hit])
            if not hit and cl(ne) <= W:
                if ts + L <= W: out.append(f"late,{k},{ts},{a}")
            else:
                for w in hit: lst.remove(w)
                nw = [ns, ne, sum(w[2] for w in hit) + 1, sum(w[3] for w in hit) + a]
                lst.append(nw)
                if ne - 1 <= W: out.append(f"window,{k},{ns},{ne},{nw[2]},{nw[3]}")
            mx = ts if mx is None else max(mx, ts)
            nW = max(W, mx - ooo - 1)
            W = adv(sess, W, nW, out, cl)
        W = adv(sess, W, I64_MAX, out, cl)
    else:
        st = {}  # (k,s,e) -> [c,sum]
        for k, ts, a in events:
            taken = False
            for w in asg.assign(ts):
                if cl(w.end) <= W: continue
                taken = True
                acc = st.setdefault((k, w.start, w.end), [0, 0]); acc[0] += 1; acc[1] += a
                if w.end - 1 <= W: out.append(f"window,{k},{w.start},{w.end},{acc[0]},{acc[1]}")
            if not taken and ts + L <= W: out.append(f"late,{k},{ts},{a}")
            mx = ts if mx is None else max(mx, ts)
            nW = max(W, mx - ooo - 1)
            for (k, s, e), acc in list(st.items()):
                if W < e - 1 <= nW: out.append(f"window,{k},{s},{e},{acc[0]},{acc[1]}")
                if cl(e) <= nW and cl(e) != I64_MAX: del st[(k, s, e)]
            W = nW
        for (k, s, e), acc in list(st.items()):
            if W < e - 1: out.append(f"window,{k},{s},{e},{acc[0]},{acc[1]}")
    return sorted(out)

def adv(sess, W, nW, out, cl):
    for k, lst in sess.items():
        for w in list(lst):
            if W < w[1] - 1 <= nW: out.append(f"window,{k},{w[0]},{w[1]},{w[2]},{w[3]}")
            if cl(w[1]) <= nW and cl(w[1]) != I64_MAX: lst.remove(w)
    return nW

def fuzz(n):
    import random
    from reference import run
    rng = random.Random(7)
    for _ in range(n):
        spec = rng.choice(["tumbling:%d:%d" % (rng.randint(1, 12), rng.randint(-11, 11)),
                           "sliding:%d:%d" % (rng.randint(1, 15), rng.randint(1, 8)),
                           "session:%d" % rng.randint(1, 10)])
        ooo, L = rng.randint(0, 6), rng.choice([0, 0, 1, 3, 8])
        ev = [(rng.choice("ab"), rng.randint(-30, 60), rng.randint(-5, 5))
              for _ in range(rng.randint(1, 25))]
        a = run(ev, parse_window(spec), ooo, L)
        b = naive(ev, spec, ooo, L)
        if a != b:
            print("MISMATCH", spec, ooo, L, ev, a, b, sep="\n")
            return 1
    print("fuzz: %d configurations agree" % n)
    return 0


if __name__ == '__main__':
    import glob
    if len(sys.argv) == 3 and sys.argv[1] == '--fuzz':
        sys.exit(fuzz(int(sys.argv[2])))
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    bad = 0
    for f in sorted(glob.glob('*.args')):
        n = f[:-5]; a = open(f).read().split()
        d = dict(zip(a[::2], a[1::2]))
        if '--trigger' in d or '--evictor' in d or d['--window'].startswith('count:'):
            print(n, 'SKIPPED (trigger/evictor/count window: not modelled here)')
            continue
        got = naive(read_events(n + '.csv'), d['--window'], int(d['--out-of-orderness']), int(d['--allowed-lateness']))
        exp = open(n + '.expected').read().split('\n')[:-1]
        ok = got == exp; bad += not ok
        print(n, 'OK' if ok else 'MISMATCH')
    sys.exit(bad)
