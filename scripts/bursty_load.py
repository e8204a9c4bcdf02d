"""A bursty load for robustness checks of kmicro ab: busy 10-300 ms, idle 10-300 ms, repeat.

Run two of these beside a measurement on a 2-core machine to reproduce a shared CI runner
(docs/ab.md): `python scripts/bursty_load.py 300 & python scripts/bursty_load.py 300 &`.
"""
import os
import random
import sys
import time


def main(seconds: float) -> None:
    rng = random.Random(os.getpid())
    end = time.time() + seconds
    while time.time() < end:
        busy_until = time.time() + rng.uniform(0.01, 0.3)
        while time.time() < busy_until:
            pass
        time.sleep(rng.uniform(0.01, 0.3))


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 300.0)
