"""The timing loop, driven by a fake clock: no real time, exact expectations."""
import pytest

from kmicro.core import timing


class FakeClock:
    """Each step() advances time by the next duration (cycling); sync and the clock are free."""

    def __init__(self, durations):
        self.now, self.durations, self.calls = 0.0, list(durations), 0

    def __call__(self):
        return self.now

    def step(self):
        self.now += self.durations[self.calls % len(self.durations)]
        self.calls += 1
        return self.calls


def sync(out):
    return out


def test_first_call_is_compile_time_and_never_a_sample():
    clock = FakeClock([5.0] + [0.01] * 1000)
    out, compile_s = timing.first_call(clock.step, sync, clock)
    m = timing.measure(clock.step, sync, timing.Policy(warmup=2), clock)
    assert compile_s == 5.0 and out == 1
    assert max(m.samples) == pytest.approx(0.01)
    assert m.median == pytest.approx(0.01) and m.iqr == pytest.approx(0.0)


PER_CALL = dict(min_sample_s=0.0, warmup_s=0.0)  # one call per sample, warm-up by count


def test_stops_after_min_samples_when_tight():
    clock = FakeClock([0.002] * 1000)
    m = timing.measure(clock.step, sync, timing.Policy(warmup=3, min_samples=7, **PER_CALL), clock)
    assert len(m.samples) == 7 and m.loops == 1
    assert clock.calls == 3 + 7  # warm-up calls are run but not recorded


def test_keeps_sampling_noisy_steps_until_budget():
    clock = FakeClock([0.001, 0.003] * 5000)
    policy = timing.Policy(warmup=1, min_samples=5, budget_s=0.1, max_samples=10_000, **PER_CALL)
    m = timing.measure(clock.step, sync, policy, clock)
    assert 45 <= len(m.samples) <= 55  # ~0.1 s of 2 ms-average steps
    assert m.noisy and m.rel_iqr == pytest.approx(1.0)
    assert m.median == pytest.approx(0.002)


def test_max_samples_caps_the_loop():
    clock = FakeClock([0.001, 0.003])
    policy = timing.Policy(warmup=1, min_samples=3, max_samples=20, budget_s=1e9, **PER_CALL)
    m = timing.measure(clock.step, sync, policy, clock)
    assert len(m.samples) == 20


def test_fast_calls_are_averaged_over_loops_per_sample():
    # Alternating 1 ms / 3 ms calls: one per sample is 100% IQR; ten per sample average out.
    clock = FakeClock([0.001, 0.003])
    policy = timing.Policy(warmup=2, warmup_s=0.0, min_samples=5, min_sample_s=0.01, budget_s=1e9)
    m = timing.measure(clock.step, sync, policy, clock)
    assert m.loops == 10  # 10 ms per sample / the fastest warm-up call (1 ms)
    assert m.median == pytest.approx(0.002) and m.iqr == pytest.approx(0.0)
    assert len(m.samples) == 5 and clock.calls == 2 + 5 * 10


def test_warm_up_outlasts_the_slow_start_of_a_fresh_pass():
    # A pass runs 1.5x slower for its first 0.1 s (measured: up to 2.4x, docs/validation.md).
    # Seven tight samples of the slow start used to end the measurement there.
    durations = [0.0015] * 67 + [0.001] * 100_000
    slow_start = timing.Policy(warmup=2, warmup_s=0.0, min_samples=7, min_sample_s=0.0)
    clock = FakeClock(durations)
    assert timing.measure(clock.step, sync, slow_start, clock).median == pytest.approx(0.0015)
    clock = FakeClock(durations)
    m = timing.measure(clock.step, sync, timing.Policy(min_sample_s=0.0), clock)
    assert m.median == pytest.approx(0.001)
    assert clock.now >= timing.Policy().warmup_s


def test_time_spent_between_samples_is_left_out_of_the_measurement():
    # kmicro calibrate --independent runs the other process's block between samples: a
    # measurement with such pauses must equal the one without (samples, loops, stop).
    ms = 2.0 ** -10  # about a millisecond, and exact in binary: no rounding to compare
    policy = timing.Policy(warmup=2, warmup_s=50 * ms, min_samples=5, min_sample_s=10 * ms,
                           budget_s=100 * ms, max_samples=10_000)
    alone = FakeClock([ms, 3 * ms])
    plain = timing.measure(alone.step, sync, policy, alone)
    clock, phases = FakeClock([ms, 3 * ms]), []

    def between(phase):
        phases.append(phase)
        clock.now += 0.5  # far beyond every budget, if it were counted

    m = timing.measure(clock.step, sync, policy, clock, between=between)
    assert m.samples == plain.samples and m.loops == plain.loops
    assert clock.calls == alone.calls
    assert phases.count("sample") == len(m.samples)
    # a hand-over after every >= 10 ms of warm-up calls: at 12, 24, 36 and 48 ms of the
    # 52 ms that 1 + 3 ms calls take to pass warmup_s
    assert phases[:phases.index("sample")] == ["warmup"] * 4


def test_quick_policy_is_cheaper():
    q, d = timing.Policy.quick(), timing.Policy()
    assert q.min_samples < d.min_samples and q.budget_s < d.budget_s


def test_median_and_iqr_are_order_statistics():
    m = timing.Measurement(samples=[1.0, 2.0, 3.0, 4.0, 100.0])
    assert m.median == 3.0
    assert m.iqr == pytest.approx(2.0)  # inclusive quartiles 2 and 4; the outlier doesn't move it
    s = m.summary()
    assert s["n_samples"] == 5 and s["median_s"] == 3.0


def test_bare_loop_is_the_mean_of_synchronised_calls():
    clock = FakeClock([0.004, 0.002])
    assert timing.bare_loop(clock.step, sync, 4, clock) == pytest.approx(0.003)


def test_in_turns_alternates_the_steps_after_their_warm_up():
    clock = FakeClock([0.001, 0.003])  # a, b, a, b, ...: a takes 1 ms, b 3 ms
    a, b = timing.in_turns(clock.step, clock.step, 4, warmup=2, clock=clock)
    assert clock.calls == 2 * 2 + 2 * 4
    assert a.samples == pytest.approx([0.001] * 4) and b.samples == pytest.approx([0.003] * 4)


def test_per_call_is_one_sample_per_call_and_the_wall_time_of_all():
    clock = FakeClock([0.002, 0.004, 0.006])
    seen = []

    def call(i):
        seen.append(i)
        clock.step()

    m, wall_s = timing.per_call(call, range(3, 6), clock)
    assert seen == [3, 4, 5] and m.samples == pytest.approx([0.002, 0.004, 0.006])
    assert m.median == pytest.approx(0.004) and wall_s == pytest.approx(0.012)
