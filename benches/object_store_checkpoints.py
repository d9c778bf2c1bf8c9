#!/usr/bin/env python3
"""Checkpoints every 100 ms to an S3-compatible server against the same job without them.

Starts the S3-compatible test server (moto_server, which `./dev setup` installs; found through
TYPEINFO_MOTO_SERVER or $HOME/.cache/typeinfo-tools/venv/bin/moto_server) on a free loopback
port, then runs the release build of `orders_per_minute` (version 1, RocksDB, parallelism 2,
--orders N) without checkpoints and with `--checkpoint-dir s3://... --checkpoint-interval-ms
100`, alternately, PAIRS times; prints each run's wall time, the medians, the ratio and the
number of checkpoints the checkpointed runs completed. The target was fixed before measuring
(issue 27): the checkpointed job within 1.3x of the job without checkpoints. Exits 1 on a miss.

    cargo build --release -p typeinfo-runtime --bin orders_per_minute
    python3 benches/object_store_checkpoints.py [--orders N] [--pairs P]
"""

import argparse
import http.client
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TARGET = 1.3
BUCKET = "typeinfo-bench"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto(logs):
    moto = os.environ.get("TYPEINFO_MOTO_SERVER") or os.path.expanduser(
        "~/.cache/typeinfo-tools/venv/bin/moto_server")
    if not os.path.exists(moto):
        sys.exit(f"no moto_server at {moto}: run ./dev setup")
    port = free_port()
    child = subprocess.Popen([moto, "-H", "127.0.0.1", "-p", str(port)],
                             stdout=open(os.path.join(logs, "moto.log"), "w"),
                             stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.time() > deadline:
                child.kill()
                sys.exit("moto_server did not start listening")
            time.sleep(0.1)
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("PUT", f"/{BUCKET}")
    if c.getresponse().status != 200:
        child.kill()
        sys.exit("could not create the bucket")
    return child, port


def cpu_seconds(pid):
    """User and system CPU time of a running process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(binary, orders, env, extra, work):
    out = tempfile.mkdtemp(dir=work)
    began = time.monotonic()
    done = subprocess.run([binary, "run", "--version", "1", "--orders", str(orders),
                           "--parallelism", "2", "--state", "rocksdb", "--output", out] + extra,
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - began
    shutil.rmtree(out, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(f"orders_per_minute failed: {done.stderr}")
    completed = 0
    for line in done.stderr.splitlines():
        if line.startswith("job.numCompletedCheckpoints:"):
            completed = int(line.split(":")[1])
    return seconds, completed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--orders", type=int, default=20_000_000)
    p.add_argument("--pairs", type=int, default=3)
    args = p.parse_args()
    target_dir = os.environ.get("CARGO_TARGET_DIR",
                                os.path.expanduser("~/.cache/typeinfo-target"))
    binary = os.path.join(target_dir, "release", "orders_per_minute")
    if not os.path.exists(binary):
        sys.exit(f"no {binary}: cargo build --release -p typeinfo-runtime --bin orders_per_minute")
    work = tempfile.mkdtemp()
    moto, port = start_moto(work)
    env = dict(os.environ, AWS_ENDPOINT=f"http://127.0.0.1:{port}", AWS_ALLOW_HTTP="true",
               AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1")
    plain, checkpointed = [], []
    try:
        for i in range(args.pairs):
            cpu0 = children_cpu()
            plain.append(run(binary, args.orders, env, [], work)[0])
            cpu1, server0 = children_cpu(), cpu_seconds(moto.pid)
            prefix = f"s3://{BUCKET}/run-{i}"
            seconds, completed = run(binary, args.orders, env,
                                     ["--checkpoint-dir", prefix,
                                      "--checkpoint-interval-ms", "100", "--metrics"], work)
            cpu2, server1 = children_cpu(), cpu_seconds(moto.pid)
            checkpointed.append(seconds)
            print(f"pair {i + 1}: without checkpoints {plain[-1]:.2f} s "
                  f"(job CPU {cpu1 - cpu0:.2f} s), with checkpoints every 100 ms to S3 "
                  f"{seconds:.2f} s ({completed} checkpoints completed; job CPU "
                  f"{cpu2 - cpu1:.2f} s, the S3 server's CPU {server1 - server0:.2f} s, on the "
                  f"same cores)", flush=True)
            if completed == 0:
                sys.exit("no checkpoint completed: the comparison would mean nothing")
    finally:
        moto.kill()
        moto.wait()
        shutil.rmtree(work, ignore_errors=True)
    a, b = statistics.median(plain), statistics.median(checkpointed)
    ratio = b / a
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"orders={args.orders} without={a:.2f}s with={b:.2f}s ratio={ratio:.2f} "
          f"target<={TARGET} {verdict}")
    sys.exit(0 if ratio <= TARGET else 1)


if __name__ == "__main__":
    main()
