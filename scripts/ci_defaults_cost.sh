#!/usr/bin/env bash
# What kmicro ab's defaults cost CI: the tests they reach, in one process, alternating between
# this checkout and the same checkout with the earlier defaults (25 rounds over 5 worker pairs,
# both sides of a round on every CPU) and the bisection tests' earlier 3 % change. (Their cap
# of 25 rounds and the relative suite's are what the earlier defaults give anyway.)
#
#     scripts/ci_defaults_cost.sh [CYCLES] [OUT]
#
# Edits kmicro/analysis/ab.py, kmicro/cli/common.py and tests/test_bisect.py for the earlier
# runs and puts them back after each (those must have no changes). Walls go to
# OUT/summary.txt, each run's per-test times to OUT/<which>-<cycle>.xml (JUnit).
set -euo pipefail
cd "$(dirname "$0")/.."
cycles=${1:-2}
out=${2:-results/ci-defaults-cost}
edited=(kmicro/analysis/ab.py kmicro/cli/common.py tests/test_bisect.py)
git diff --quiet HEAD -- "${edited[@]}" || { echo "${edited[*]} have changes: commit or stash them" >&2; exit 2; }
mkdir -p "$out"
tests=(tests/test_ab.py tests/test_bisect.py tests/test_sweep.py tests/test_machine.py
       tests/test_placement.py
       tests/test_asv.py::test_relative_suite_stores_each_ratio_against_the_reference
       tests/test_user_stacks.py::test_env_with_kmicro_at_a_revision_runs_its_own_kmicro)
restore() { git checkout -q HEAD -- "${edited[@]}"; }
trap restore EXIT

earlier() {
    sed -i 's/    max_rounds: int = 80/    max_rounds: int = 25/; s/    processes: int = 16/    processes: int = 5/;
            s/    same_cpu: bool = True/    same_cpu: bool = False/' kmicro/analysis/ab.py
    sed -i 's/"--rounds", type=int, default=80,/"--rounds", type=int, default=25,/;
            s/BooleanOptionalAction, default=True,/BooleanOptionalAction, default=False,/' kmicro/cli/common.py
    sed -i 's/"--min-effect", "0.1", //' tests/test_bisect.py
    [ "$(git diff --numstat HEAD -- "${edited[@]}" | wc -l)" = 3 ] ||
        { echo "the defaults were not found to edit" >&2; exit 1; }
}

for cycle in $(seq 1 "$cycles"); do
    for which in these earlier; do
        restore
        [ "$which" = earlier ] && earlier
        start=$(date +%s)
        rc=0
        .venv/bin/python -m pytest -q -p no:cacheprovider -m "" "${tests[@]}" \
            --junitxml="$out/$which-$cycle.xml" > "$out/$which-$cycle.log" 2>&1 || rc=$?
        echo "$which $cycle: wall $(( $(date +%s) - start )) s, pytest exit $rc" | tee -a "$out/summary.txt"
    done
done
