"""Call-cache writes and lookups per second (goal >= 20,000/s), batched and one by one.

    python benchmarks/bench_cache.py [--n 100000]                  # SQLite in a temp dir
    python benchmarks/bench_cache.py --postgres-local              # a throw-away local PostgreSQL
    python benchmarks/bench_cache.py --cache postgresql://host/db  # an existing (empty) database
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from judgelab.cache import CachedCall, CallCache
from judgelab.records import sha256_hex


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000, help="stored calls")
    ap.add_argument("--cache", help="cache location (path or postgresql:// URL); default a temp SQLite file")
    ap.add_argument("--postgres-local", action="store_true",
                    help="start a throw-away PostgreSQL on 127.0.0.1 (tests/helpers/pg_server.py) and use it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        location = args.cache or str(Path(d) / "calls.sqlite")
        if args.postgres_local:
            import sys

            sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
            from tests import pg_server

            location = pg_server.server().new_database()
        cache = CallCache(location)
        print(f"backend: {type(cache).__name__}")
        keys = [sha256_hex(f"request {i}") for i in range(args.n)]
        t0 = time.perf_counter()
        for i in range(0, args.n, 5000):
            cache.put_many(
                (CachedCall(k, "bench", "simulated", "sim", "pairwise", '{"verdict": "A"}' + " x" * 100, None,
                            700, 40, 0.0, 0.0, "stop"), {"messages": []})
                for k in keys[i : i + 5000]
            )
        t1 = time.perf_counter()
        probe = random.Random(0).sample(keys, min(args.n, 50_000))
        found = cache.get_many(probe)
        t2 = time.perf_counter()
        single = probe[:20_000]
        hits = sum(cache.get(k) is not None for k in single)
        t3 = time.perf_counter()
        assert len(found) == len(probe) and hits == len(single)
        print(f"cache: {args.n:,} calls written in {t1 - t0:.2f} s ({args.n / (t1 - t0):,.0f}/s)")
        print(f"  batched lookups (get_many): {len(probe) / (t2 - t1):,.0f}/s (goal >= 20,000)")
        print(f"  single lookups (get):       {len(single) / (t3 - t2):,.0f}/s (goal >= 20,000)")
        cache.close()


if __name__ == "__main__":
    main()
