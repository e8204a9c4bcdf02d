"""asv suite: each seed layer's time as a ratio to a pinned reference stack, drift-proof.

`asv publish` draws one absolute time per commit, and this kind of VM drifts 10-35 % between
runs, so a history of absolute times steps where nothing changed. Here every commit is timed
*against a reference* in interleaved rounds (`kmicro ab`, docs/guide-versions.md): drift hits both sides
alike, and the stored value is this environment's time / the reference's (1.0 = as fast).

The reference is a stack kmicro made once and keeps: `make asv-reference` builds
`asv-ref-<backend>`, the backend's stack with kmicro itself pinned at ASV_REFERENCE_REV, so
its workers run that fixed kmicro on the fixed packages (docs/guide-asv.md). KMICRO_ASV_REFERENCE
names another stack. One `kmicro ab` per commit and environment (setup_cache) compares the
whole selection; the 95 % intervals, rounds and both sides' versions go to a sidecar,
`.asv/relative/<commit>-<environment>.json`, a kmicro results file (`kmicro report` shows it).
"""
import json
import os
import sys
from pathlib import Path

from kmicro.core import cases
from kmicro.core.stacks import Stack, all_stacks

from .common import BACKEND, FAMILY, named_cases, skip

# The seed layers, forward and forward+backward: small enough for every night.
# KMICRO_ASV_OPS narrows it (tests: one layer); KMICRO_ASV_CASES adds any case ids (';').
OPS = tuple((os.environ.get("KMICRO_ASV_OPS") or "conv2d,batchnorm,maxpool,dense").split(","))
PASSES = ("forward", "backward")
SELECTION = list(dict.fromkeys(cases.select(OPS, data_format="auto") + named_cases()))
REFERENCE = os.environ.get("KMICRO_ASV_REFERENCE") or f"asv-ref-{BACKEND}"
# A history point is one estimate per commit, judged with `kmicro ab`'s defaults: both sides
# of every round on one CPU (this VM's vCPUs change speed apart from each other, and worker
# pairs on different vCPUs read the same code 0.63-1.39x: jax A/A, docs/guide-asv.md), and
# passes still unsettled after 25 rounds going on over more worker pairs, to 80.
# KMICRO_ASV_ROUNDS caps the rounds (as `kmicro ab --rounds`): a quicker, less certain history.
ROUNDS = os.environ.get("KMICRO_ASV_ROUNDS", "")


def compare() -> dict:
    """{"case|pass": A/B record} of one interleaved run, or {"skip": why}."""
    from kmicro.analysis import ab  # the runner starts workers; not at discovery
    from kmicro.harness import runner

    if FAMILY != "keras3":
        return {"skip": "the relative suite runs the Keras 3 stacks"}
    if ROUNDS and not (ROUNDS.isdigit() and int(ROUNDS) >= 1):
        return {"skip": f"KMICRO_ASV_ROUNDS={ROUNDS!r}: expected a whole number of rounds >= 1"}
    settings = ab.Settings(max_rounds=int(ROUNDS), processes=ab.pairs_for(int(ROUNDS))) \
        if ROUNDS else ab.Settings()
    reference = all_stacks().get(REFERENCE)
    if reference is None or not reference.installed:
        return {"skip": f"no reference stack {REFERENCE}: run `make asv-reference "
                        f"BACKENDS={BACKEND}`"}
    this = Stack(name=f"asv-{BACKEND}", backend=BACKEND, family=FAMILY,
                 executable=sys.executable, python=".".join(map(str, sys.version_info[:2])))
    got = []
    ab.run(reference, this, SELECTION, PASSES, runner.Options(timeout_s=600.0),
           settings, got.append)
    _sidecar(got)
    return {f"{r['case']}|{r['pass']}": r for r in got}


def _sidecar(got):
    """The whole records (intervals, rounds, versions) beside asv's results."""
    # asv sets ASV_CONF_DIR for the environments it builds, not for `-E existing:`
    root = Path(os.environ.get("ASV_CONF_DIR") or Path(__file__).resolve().parents[1])
    name = f"{os.environ.get('ASV_COMMIT', 'local')[:10]}-{os.environ.get('ASV_ENV_NAME', BACKEND)}"
    path = root / ".asv" / "relative" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(got, indent=1))


class Relative:
    params = ([c.id for c in SELECTION], list(PASSES))
    param_names = ["case", "pass"]
    timeout = 1800  # setup_cache: one kmicro ab over the whole selection

    def setup_cache(self):
        return compare()

    def setup(self, compared, case_id, pass_name):
        if "skip" in compared:
            raise skip(compared["skip"])
        record = compared.get(f"{case_id}|{pass_name}")
        if record is None or record["status"] != "ok":
            raise skip(f"not compared: {record and record.get('error')}")

    def track_ratio(self, compared, case_id, pass_name):
        """This environment's time / the reference's, paired interleaved rounds (median)."""
        return compared[f"{case_id}|{pass_name}"]["ratio"]

    track_ratio.unit = "ratio (this / reference)"
