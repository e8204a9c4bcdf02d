"""Replay the rounds of recorded `kmicro ab` runs under a stopping rule: what it would flag.

    .venv/bin/python scripts/replay_stopping.py RESULTS.json [...]

Every A/B record keeps its rounds (times_a_s, times_b_s, round_pairs). Replayed round by round,
they give the verdict a rule would have reached on the same data; on an A/A run (the same
stack on both sides) every pass it calls slower or faster is a false alarm. Two rules:
- defaults: kmicro.analysis.ab's (no change stops a pass on the 95 % interval once two worker
  pairs have timed it; a change on the 99 % one once three have; at 25 rounds the
  conclusive stop, the unsure go on to 80);
- 99 % only, 25 rounds: every early stop on the 99 % interval once three pairs have timed the
  pass, the cap at 25.
A record's rounds end where its own run stopped; a pass the replayed rule has not stopped by
then is judged on all of them ("cut"). Then the interval alone, without stopping: of the passes
recorded with at least N rounds, how many an interval of their first N excludes 1 from (95 %
nominal: at most 5 % on A/A runs), and the median MDE there.
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kmicro.analysis import ab, ab_stats  # noqa: E402


def _earlier(times, groups, done, settings) -> bool:
    if len(set(groups)) < min(3, settings.processes):
        return False
    return ab_stats.compare(times[0], times[1], ab_stats.EARLY_CONFIDENCE, groups).settled(
        settings.min_effect)


AT_ROUNDS = (15, 25, 50)
RULES = {"defaults": (ab.stops, ab.Settings()),
         "99 % only, 25 rounds": (_earlier, ab.Settings(max_rounds=25, regular_rounds=25,
                                                        processes=5))}


def replay(record, stops, settings) -> tuple:
    """(verdict, rounds, cut) of one record's rounds under `stops`."""
    a, b, groups = record["times_a_s"], record["times_b_s"], record["round_pairs"]
    first = settings.min_rounds
    done = last = min(len(a), settings.max_rounds)
    stopped = False
    for done in range(first, last + 1):
        stopped = stops((a[:done], b[:done]), groups[:done], done, settings)
        if stopped:
            break
    judged = ab_stats.compare(a[:done], b[:done], ab_stats.CONFIDENCE, groups[:done])
    cut = not stopped and done == len(a) < settings.max_rounds
    return judged.verdict(settings.min_effect), done, cut


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", type=Path, help="`kmicro ab --json` results")
    args = p.parse_args(argv)
    records = []
    for path in args.files:
        records += [r for r in json.loads(path.read_text())
                    if r.get("kind") == "ab" and r.get("status") == "ok"
                    and len(r.get("times_a_s") or []) >= 2]
    if not records:
        print("no A/B records with rounds in these files", file=sys.stderr)
        return 2
    print(f"{len(records)} passes from {len(args.files)} files")
    for name, (stops, settings) in RULES.items():
        got = [replay(r, stops, settings) for r in records]
        flagged = sum(v != "same" for v, _, _ in got)
        print(f"{name}: {flagged} of {len(got)} flagged ({flagged / len(got):.1%}); median "
              f"rounds {statistics.median(n for _, n, _ in got):.0f}; "
              f"{sum(c for _, _, c in got)} cut by the recording's end")
    for n in AT_ROUNDS:
        judged = [ab_stats.compare(r["times_a_s"][:n], r["times_b_s"][:n], ab_stats.CONFIDENCE,
                                   r["round_pairs"][:n])
                  for r in records if len(r["times_a_s"]) >= n]
        if judged:
            apart = sum(j.ci_low > 1 or j.ci_high < 1 for j in judged)
            print(f"at {n} rounds: the interval excludes 1 in {apart} of {len(judged)} "
                  f"({apart / len(judged):.1%}); median MDE "
                  f"{statistics.median(j.mde for j in judged):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
