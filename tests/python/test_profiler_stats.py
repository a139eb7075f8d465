"""The step profiler's statistics against numpy, its verdict bands, and featcache.StepProfiler's
Python API (context managers, iterate(), nesting, trace JSON) over the C library."""
import ctypes
import json
import os
import re
import sys
import time
import warnings

import numpy as np
import pytest

try:
    from featcache.profiler import StepProfiler, batch_items, series_stats, verdict, load_library
    load_library()
except OSError as e:  # the library is not built in this tree
    print("FAIL: %s" % e)
    sys.exit(1)


def numpy_acf(x):
    """Textbook sample autocorrelation r(k), k = 0..n-1 (statsmodels' acf, unadjusted)."""
    d = np.asarray(x, float) - np.mean(x)
    c = np.correlate(d, d, "full")[len(d) - 1:]
    return c / c[0]


def check_against_numpy(x):
    s = series_stats(x)
    x = np.asarray(x, float)
    assert s["n"] == len(x)
    assert s["mean"] == pytest.approx(np.mean(x), rel=1e-12, abs=1e-12)
    assert s["std"] == pytest.approx(np.std(x), rel=1e-9, abs=1e-12)
    assert s["min"] == np.min(x) and s["max"] == np.max(x)
    assert s["p50"] == pytest.approx(np.median(x), rel=1e-12, abs=1e-12)
    assert s["p95"] == pytest.approx(np.percentile(x, 95), rel=1e-12, abs=1e-12)
    assert s["p99"] == pytest.approx(np.percentile(x, 99), rel=1e-12, abs=1e-12)
    assert s["variation_ratio"] == pytest.approx(np.std(x) / np.mean(x), rel=1e-9)
    r = numpy_acf(x)
    half = len(x) // 2
    k = 1 + int(np.argmax(r[1:half + 1]))
    assert s["autocorr"]["lag"] == k
    assert s["autocorr"]["coef"] == pytest.approx(r[k], rel=1e-9, abs=1e-12)
    return s


def test_random_series_match_numpy():
    rng = np.random.default_rng(8)
    for n in (2, 3, 10, 101, 1000):
        check_against_numpy(rng.gamma(2.0, 3.0, size=n) + 0.1)


def test_long_series_match_numpy():
    """The periodicity is taken over the whole series, as defined (lags 1 .. n/2 of all n
    steps), past 16,384 steps too: it used to look at the last 16,384 only (and took seconds)."""
    rng = np.random.default_rng(5)
    n = 20000
    x = rng.gamma(2.0, 3.0, size=n) + 0.1
    x[: n - 16384] += 40 * (np.arange(n - 16384) % 7 == 0)  # a period of 7 in the first steps
    s = check_against_numpy(x)
    assert s["autocorr"]["lag"] == 7
    # exactly periodic, long (the FFT's path): r(p) = 1 - p/n still to 1e-12
    p, n = 10, 3000
    s = check_against_numpy(np.where(np.arange(n) % p == p - 1, 45.0, 0.5))
    assert s["autocorr"]["lag"] == p
    assert s["autocorr"]["coef"] == pytest.approx(1 - p / n, rel=0, abs=1e-12)
    for n in (513, 1000, 4097):  # either side of the direct sum's limit and of a power of two
        check_against_numpy(rng.gamma(2.0, 3.0, size=n) + 0.1)


def test_periodic_series_period_and_correlation():
    # A prefetch queue that runs dry every 10th step: 9 fast fetches, one slow one, 30 periods.
    p, n = 10, 300
    x = np.where(np.arange(n) % p == p - 1, 45.0, 0.5)
    s = check_against_numpy(x)
    assert s["autocorr"]["lag"] == p
    assert s["autocorr"]["coef"] == pytest.approx(1 - p / n, rel=1e-12)
    # a noisy sine of period 16 over 512 steps: the lag is the period, r close to 1 - 16/512
    t = np.arange(512)
    y = 10 + 3 * np.sin(2 * np.pi * t / 16) + np.random.default_rng(1).normal(0, 0.1, 512)
    s = check_against_numpy(y)
    assert s["autocorr"]["lag"] == 16
    assert s["autocorr"]["coef"] == pytest.approx(1 - 16 / 512, abs=0.01)


def test_constant_series_has_no_period():
    s = series_stats([4.0] * 20)
    assert s["std"] == 0 and s["autocorr"] == {"lag": 0, "coef": 0.0}


def test_a_series_with_nan_or_infinity_is_refused():
    # numpy's statistics of such a series are nan; the C ones were a mix (min 1 and max 3 beside a
    # nan median, from a sort whose comparison a nan breaks): refused, saying why
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError, match="not a finite number"):
            series_stats([1.0, bad, 3.0])
    L = load_library()
    prof = StepProfiler()
    arr = (ctypes.c_double * 2)(50.0, float("nan"))  # GPU busy samples: a nan is refused too
    assert L.fc_profiler_set_gpu_busy(prof._h, arr, 2, 50.0, b"test") == -31902  # FC_ECONFIG
    assert prof.json()["gpu_busy"]["measured"] is False
    prof.close()


def test_verdict_of_no_share_is_refused():
    # a NaN share read "highly input-bound" (no band holds it), a negative one "not input-bound"
    for bad in (float("nan"), float("inf"), -0.1):
        with pytest.raises(ValueError, match="data share"):
            verdict(bad)
    with pytest.raises(ValueError, match="variation ratio"):
        verdict(0.3, float("nan"))


def test_verdict_bands():
    assert verdict(0.0) == "not input-bound"
    assert verdict(0.049, 3.0) == "not input-bound"  # jitter of a tiny data phase is not flagged
    assert verdict(0.05) == "moderately input-bound"
    assert verdict(0.2) == "moderately input-bound"
    assert verdict(0.15, 0.6) == "moderately input-bound, unstable"
    assert verdict(0.21) == "highly input-bound"
    assert verdict(0.8, 0.51) == "highly input-bound, unstable"


def test_python_api_nesting_and_trace(tmp_path):
    prof = StepProfiler()
    for i in range(12):
        with prof.step():
            with prof.phase("data"):
                time.sleep(0.03 if i % 4 == 3 else 0.0005)  # contrast far above sleep jitter
            with prof.phase("compute"):
                with prof.phase("forward"):
                    time.sleep(0.002)
                with prof.phase("backward"):
                    time.sleep(0.001)
    assert prof.steps == 12
    assert prof.phases() == ["data", "compute", "forward", "backward"]
    step = np.array(prof.series("step"))
    parts = sum(np.array(prof.series(n)) for n in prof.phases() + ["other"])
    assert np.allclose(parts, step, rtol=0, atol=1e-6)  # nothing counted twice
    assert all(f >= 1.9 for f in prof.series("forward"))
    # self time excludes its children (median: one preemption on a loaded machine may take ms)
    assert np.median(prof.series("compute")) < 1.0
    st = prof.stats("data")
    assert st["n"] == 12 and st["autocorr"]["lag"] == 4
    share, v = prof.verdict()
    assert share == pytest.approx(st["share"]) and v.startswith("highly input-bound")
    summary = prof.json()
    assert summary["steps"] == 12 and summary["verdict"] == v
    assert set(summary["phases"]) == {"data", "compute", "forward", "backward"}
    assert "verdict: highly input-bound" in prof.report()

    path = tmp_path / "trace.json"
    prof.save_trace(str(path))
    trace = json.loads(path.read_text())
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    steps = sorted(e["args"]["step"] for e in xs if e["name"] == "step")
    assert steps == list(range(12))
    byname = {}
    for e in xs:
        byname.setdefault(e["name"], []).append(e)
    assert {k: len(v) for k, v in byname.items()} == {
        "step": 12, "data": 12, "compute": 12, "forward": 12, "backward": 12}
    # children lie inside their parent
    for f in byname["forward"]:
        c = next(c for c in byname["compute"] if c["args"]["step"] == f["args"]["step"])
        assert c["ts"] <= f["ts"] and f["ts"] + f["dur"] <= c["ts"] + c["dur"] + 1e-3
    prof.close()


def test_iterate_and_exceptions():
    prof = StepProfiler()
    seen = []
    for item in prof.iterate(range(5)):
        with prof.phase("compute"):
            seen.append(item)
    assert seen == list(range(5)) and prof.steps == 5  # the exhausted fetch is not a step
    for item in prof.iterate(range(100)):
        if item == 2:
            break
    assert prof.steps == 5 + 2  # the step left by break is dropped, not half-recorded
    with pytest.raises(ZeroDivisionError):
        with prof.step():
            with prof.phase("data"):
                1 / 0
    assert prof.steps == 7
    with pytest.raises(RuntimeError, match="FC_EBADSTATE"):
        prof.end()
    prof.close()


def test_iterate_failing_before_the_yield_drops_the_step():
    """A failure between the step's begin and the yield (a bad phase name, a counting callable
    that raises, a count that is refused) drops the open step: the profiler takes later steps
    (it used to keep the step open and answer every later one with FC_EBADSTATE)."""
    prof = StepProfiler()

    def boom(batch):
        raise ValueError("cannot count")
    for kw, exc in ((dict(phase="x" * 70), ValueError), (dict(items=boom), ValueError),
                    (dict(items=lambda b: -1), ValueError)):
        with pytest.raises(exc):
            for _ in prof.iterate([1, 2, 3], **kw):
                pass
        with prof.step():
            with prof.phase("data"):
                pass
    assert prof.steps == 3
    for _ in prof.iterate([np.zeros((2, 1))]):
        pass
    assert prof.steps == 4
    # items that is neither None, False nor a callable: said before any step begins
    with pytest.raises(TypeError, match="items="):
        for _ in prof.iterate([1], items=32):
            pass
    for _ in prof.iterate([np.zeros((2, 1))]):
        pass
    assert prof.steps == 5
    prof.close()


def test_long_gpu_note_is_cut_between_characters(tmp_path):
    """A GPU note longer than the profiler keeps (255 bytes) is cut at a UTF-8 character's
    boundary: the report decodes and the saved profile is JSON (a cut inside "é" made both
    fail)."""
    for reason in ("é" * 200, "x" + "€" * 100, "a" * 300):
        prof = StepProfiler()
        prof.gpu_not_measured(reason)
        with prof.step():
            with prof.phase("data"):
                pass
        line = [l for l in prof.report().splitlines() if l.startswith("gpu busy")][0]
        note = prof.json()["gpu_busy"]["note"]
        assert reason.startswith(note) and len(note.encode()) > 250, (len(note.encode()), note)
        assert note in line
        prof.save(str(tmp_path / "p.json"))
        assert json.loads((tmp_path / "p.json").read_text())["gpu_busy"]["note"] == note
        prof.close()


def test_use_after_close_raises(tmp_path):
    """A closed profiler (close(), or the end of a `with StepProfiler() as prof:` block) raises
    ValueError on use: it used to hand the C library a NULL handle and crash the interpreter."""
    with StepProfiler() as prof:
        for _ in prof.iterate([1, 2]):
            pass
        assert prof.steps == 2
    for use in (lambda: prof.steps, prof.report, prof.json, prof.trace, prof.phases,
                prof.begin_step, prof.reset, lambda: prof.save(str(tmp_path / "p.json")),
                lambda: prof.series("step"), lambda: prof.stats("data"), prof.verdict,
                lambda: prof.add("h2d", 1.0), lambda: list(prof.iterate([1]))):
        with pytest.raises(ValueError) as e:
            use()
        # what to do, too (it said only 'the StepProfiler is closed')
        assert str(e.value) == ("featcache: the StepProfiler is closed (close(), or the end of "
                                "its with block, freed it): read its results (report(), json(), "
                                "save()) before it closes")
    prof.close()  # again: nothing to do


def test_no_data_phase_is_no_verdict():
    """A loop whose phases never include the data phase ("load" and "train" with the default
    data_phase "data") gets no verdict, and is told which phase the verdict looks at; it used to
    be called "not input-bound" whatever "load" took."""
    prof = StepProfiler()
    for _ in range(3):
        with prof.step():
            with prof.phase("load"):
                time.sleep(0.002)
            with prof.phase("train"):
                pass
    share, v = prof.verdict()
    assert share == 0 and v == "no data phase"
    assert prof.json()["verdict"] == "no data phase"
    assert prof.report().splitlines()[-1] == (
        'verdict: none: no phase "data" ran (name the phase that fetches the batch "data", or '
        'pass its name as data_phase)')
    # no step at all (an empty loader): no verdict either, rather than "not input-bound"
    empty = StepProfiler()
    for _ in empty.iterate([]):
        pass
    # (the fetch that found the loader empty was dropped, its phase name with it)
    assert empty.steps == 0 and empty.phases() == []
    assert empty.verdict() == (0.0, "no steps") and empty.json()["verdict"] == "no steps"
    assert empty.report().splitlines()[-1] == "verdict: none: no steps"
    empty.close()
    # named: the verdict is back
    prof = StepProfiler(data_phase="load")
    with prof.step():
        with prof.phase("load"):
            time.sleep(0.002)
    assert prof.verdict()[1] == "highly input-bound"
    prof.close()


def test_bad_names_say_what_is_wrong():
    """A label or phase name too long says so and by how much (it read "FC_ECONFIG: invalid
    configuration"); one of 127 / 63 bytes is taken."""
    with pytest.raises(ValueError, match=r"label of 128 bytes: at most 127"):
        StepProfiler(label="x" * 128)
    prof = StepProfiler(label="é" * 63 + "x")
    with pytest.raises(ValueError, match=r"data_phase .* of 64 bytes: at most 63"):
        StepProfiler(data_phase="d" * 64)
    with prof.step():
        with pytest.raises(ValueError, match=r"phase name .* of 64 bytes: at most 63"):
            prof.begin("p" * 64)
        with pytest.raises(ValueError, match=r"phase name '': empty"):
            prof.begin("")
        with prof.phase("p" * 63):
            pass
    assert prof.steps == 1 and prof.json()["label"] == "é" * 63 + "x"
    prof.close()


def test_table_columns_align_with_long_names():
    """A phase or device name longer than 14 characters widens the name column: every row's
    numbers stay under their headings (they were pushed right, row by row)."""
    prof = StepProfiler()
    for _ in range(3):
        with prof.step():
            with prof.phase("data"):
                pass
            with prof.phase("optimizer_step_and_zero_grad"):
                pass
            prof.add_device("optimizer_step_and_zero_grad", 0.001)
    lines = prof.report().splitlines()
    head, rows = lines[1], lines[2:-1]
    assert [r.split()[0] for r in rows] == ["data", "optimizer_step_and_zero_grad", "(other)",
                                             "(step)", "optimizer_step_and_zero_grad"]
    end = head.index("mean") + len("mean")
    for r in rows:
        assert r[end - 1] != " " and r[end] == " ", (head, r)  # the mean ends under "mean"
        assert len(r) == len(rows[0]), (rows[0], r)
    prof.close()


def test_a_phase_named_step_is_that_phase():
    """A phase named "step" (optimizer.step(), say) or "other" is what series()/stats() give for
    that name, as in the table, where the totals are "(step)" and "(other)"; the wall time of the
    step used to hide it."""
    prof = StepProfiler()
    for _ in range(4):
        with prof.step():
            with prof.phase("data"):
                pass
            with prof.phase("step"):
                time.sleep(0.002)
    own, wall = prof.series("step"), prof.series("(step)")
    assert all(o >= 1.9 for o in own) and all(w > o for w, o in zip(wall, own))
    assert prof.stats("step")["mean"] == pytest.approx(np.mean(own))
    assert prof.stats("(step)")["share"] == pytest.approx(1.0)
    other = prof.series("other")  # no phase "other": the time in no phase, as before
    assert other == prof.series("(other)")
    assert np.allclose(np.array(own) + prof.series("data") + other, wall, rtol=0, atol=1e-6)
    with pytest.raises(KeyError):
        prof.series("nothing")
    prof.close()


def test_gpu_sampling_period_out_of_range_is_an_error():
    """A sampling period out of 1 .. 60000 ms is the caller's mistake: ValueError saying so (it
    was recorded as "GPU busy: not measured", as if NVML were missing)."""
    for period in (0, 0.5, 1e6):
        with pytest.raises(ValueError, match=r"sampling period .* out of range \(1 \.\. 60000\)"):
            StepProfiler(gpu_busy=True, gpu_period_ms=period)
        prof = StepProfiler()
        with pytest.raises(ValueError, match="sampling period"):
            prof.start_gpu_sampler(0, period_ms=period)
        prof.close()


class _Counting:
    """The library, counting the calls of fc_profiler_report."""

    def __init__(self, real):
        self._real, self.reports = real, 0

    def __getattr__(self, name):
        return getattr(self._real, name)

    def fc_profiler_report(self, *a):
        self.reports += 1
        return self._real.fc_profiler_report(*a)


def test_a_report_is_rendered_once():
    """report() and json() render once (each rendering takes every series' statistics again);
    they used to render twice, once to learn the size. A report
    larger than the first buffer is rendered again, whole."""
    prof = StepProfiler()
    lib = prof._lib = _Counting(prof._lib)
    for _ in range(5):
        with prof.step():
            with prof.phase("data"):
                pass
    assert prof.report().endswith("of the step)\n") and lib.reports == 1
    assert prof.json()["steps"] == 5 and lib.reports == 2
    for _ in range(2000):
        with prof.step():
            with prof.phase("data"):
                pass
    trace = json.loads(prof.trace())  # about 300 KB: a second rendering at its size
    assert len([e for e in trace["traceEvents"] if e["name"] == "data"]) == 2005
    assert lib.reports == 4
    prof.close()


def test_calls_out_of_order_say_why():
    """A call the state refuses says what is wrong, after FC_EBADSTATE and instead of its own
    text ("handle unusable after an earlier failure", of another thing: the calls were only out
    of order, nothing had failed, and it led the message)."""
    prof = StepProfiler()
    for call, why in ((prof.end_step, "no step is open"), (prof.end, "no phase is open"),
                      (lambda: prof.begin("data"), "no step is open"),
                      (lambda: prof.add("h2d", 1.0), "no step is open"),
                      (lambda: prof.count(3), "no step is open")):
        with pytest.raises(RuntimeError, match="FC_EBADSTATE.*" + why):
            call()
    with pytest.raises(RuntimeError) as e:
        prof.end()
    assert str(e.value) == "phase end: FC_EBADSTATE: no phase is open"
    prof.begin_step()
    with pytest.raises(RuntimeError, match="FC_EBADSTATE.*a step is already open"):
        prof.begin_step()
    prof.begin("data")
    with pytest.raises(RuntimeError, match="FC_EBADSTATE.*a phase in it is still open"):
        prof.end_step()
    prof.end()
    prof.end_step()
    assert prof.steps == 1
    prof.close()


def test_iterate_beside_an_unfinished_one_says_so():
    """An iterate() kept unfinished (a peek with next(it)) leaves its step open: a second
    iterate() of the profiler said only 'step begin: FC_EBADSTATE: handle unusable after an
    earlier failure (a step is already open: end_step() or cancel_step() first)', of calls the
    loop never made; it names the iterator now, and what to do."""
    prof = StepProfiler()
    want = ("featcache: StepProfiler.iterate: a step of this profiler is already open: an "
            "earlier iterate() of it is not finished (an iterator kept after next(it): run it to "
            "its end, or let it go: it.close() or del it), or the loop is inside prof.step() "
            "(iterate makes each step itself)")
    it = prof.iterate([1, 2, 3])
    assert next(it) == 1
    with pytest.raises(ValueError) as e:
        next(prof.iterate([4]))
    assert str(e.value) == want
    it.close()  # its open step dropped
    assert list(prof.iterate([4, 5])) == [4, 5] and prof.steps == 2
    with prof.step():
        with pytest.raises(ValueError) as e:
            next(prof.iterate([6]))
        assert str(e.value) == want
    assert prof.steps == 3
    prof.close()


def test_a_step_left_with_a_phase_open_is_dropped():
    """A loop that leaves a phase open (prof.begin without prof.end) cannot end its step: the
    error says so, and the step is dropped as one left by an exception. It stayed open, so every
    later step of the profiler failed ('a step is already open'), an iterate() after it blaming
    an earlier iterate() not finished."""
    from featcache.profiler import ProfilerError
    prof = StepProfiler()
    with pytest.raises(ProfilerError) as e:
        for _ in prof.iterate([1, 2]):
            prof.begin("h2d")
    assert str(e.value) == "step end: FC_EBADSTATE: no step is open, or a phase in it is still open"
    assert list(prof.iterate([3, 4])) == [3, 4] and prof.steps == 2
    with pytest.raises(ProfilerError, match="a phase in it is still open"):
        with prof.step():
            prof.begin("h2d")
    with prof.step():
        with prof.phase("h2d"):
            pass
    assert prof.steps == 3 and prof.phases() == ["data", "h2d"]
    prof.close()


class _FakeNvml:
    """The library with its NVML sampler faked (no driver here): counts samplers started and
    freed."""

    def __init__(self, real):
        self._real, self.started, self.freed = real, [], []

    def __getattr__(self, name):
        return getattr(self._real, name)

    def fc_gpu_sampler_start(self, index, period_ms, out, why, why_len):
        self.started.append(100 + len(self.started))
        out._obj.value = self.started[-1]
        return 0

    def fc_gpu_sampler_stop(self, h):
        pass

    def fc_gpu_sampler_samples(self, h, arr):
        return 0

    def fc_gpu_sampler_free(self, h):
        self.freed.append(h.value)


def test_gpu_sampler_started_twice_is_not_left_running():
    """StepProfiler(gpu_busy=True) and then start_gpu_sampler(1) (to pick the GPU): the first
    sampler is stopped and freed, not left polling NVML for ever (it used to be dropped, its thread
    running on)."""
    prof = StepProfiler()
    fake = prof._lib = _FakeNvml(prof._lib)
    assert prof.start_gpu_sampler(0) and prof.start_gpu_sampler(1, period_ms=20)
    with prof.step():
        pass
    assert fake.freed == [100] and fake.started == [100, 101]
    prof.report()  # reads the running one's samples; it goes on
    assert fake.freed == [100]
    assert prof.start_gpu_sampler(0)
    assert sorted(fake.freed) == [100, 101]
    prof.close()
    assert sorted(fake.freed) == [100, 101, 102]


def test_gpu_sampler_inherited_over_fork_is_left_alone():
    """A process forked from one that samples the GPU has the profiler but not the sampler's
    thread: closing or reading the profile there must not stop or free it (pthread_join on a
    thread of another process waits for ever); the parent's sampler is untouched."""
    prof = StepProfiler()
    fake = prof._lib = _FakeNvml(prof._lib)
    assert prof.start_gpu_sampler(0)
    pid = os.fork()
    if pid == 0:  # the child
        code = 3
        try:
            with prof.step():
                pass
            line = [l for l in prof.report().splitlines() if l.startswith("gpu busy")]
            prof.close()
            code = 0 if fake.freed == [] and line and "another process" in line[0] else 4
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    prof.close()
    assert fake.freed == [100]


class _Batch:
    def __init__(self, ids):
        self.ids = ids


def test_iterate_counts_the_utterances_delivered():
    """utterances/s is what the loop received: a short last batch counts as what it holds (the
    profile used to say steps x items_per_step: 14 % high with short last batches)."""
    batches = [(np.zeros((4, 3)), None), {"ids": ["a", "b", "c", "d"]}, _Batch(["e", "f"]),
               np.zeros((1, 80))]
    p = StepProfiler(items_per_step=4)
    for _ in p.iterate(batches):
        time.sleep(0.001)
    j = p.json()
    assert j["items_counted"] is True and j["items"] == 11
    assert j["items_per_s"] == pytest.approx(11 / (j["step"]["sum"] / 1e3), rel=1e-6)
    # not counted: steps x items_per_step, said so
    p = StepProfiler(items_per_step=4)
    for _ in p.iterate(batches, items=False):
        pass
    j = p.json()
    assert j["items_counted"] is False and j["items"] == 16
    # a callable, and count() by hand inside a step
    p = StepProfiler(items_per_step=4)
    for b in p.iterate([1, 2, 3], items=lambda b: b):
        pass
    with p.step():
        p.count(2)
        p.count(3)
    j = p.json()
    assert j["items_counted"] is True and j["items"] == 11
    # a step that counted nothing: the run is estimated
    p = StepProfiler(items_per_step=4)
    for _ in p.iterate([np.zeros((2, 1)), object()]):
        pass
    j = p.json()
    assert j["items_counted"] is False and j["items"] == 8


def test_iterate_counts_a_list_of_utterances():
    """A batch that is a list of each utterance's mel ([T_i, 80], a collate_fn that does not pad)
    holds len(list) utterances: it was counted as the first one's frames (utterances/s 60x high
    here), reading the list as a tuple of batched tensors. A tuple of batched tensors still counts
    its first dimension, even where the others differ (CTC's concatenated targets)."""
    mels = [np.zeros((t, 80), np.float32) for t in (60, 75, 90)]
    ctc = (np.zeros((2, 90, 80)), np.zeros(13), np.array([90, 75]), np.array([6, 7]))
    for batch, want in ((mels, 3), (tuple(mels), 3), ({"mels": mels}, 3), (ctc, 2),
                        ((np.zeros((4, 90, 80)), np.zeros((4, 12))), 4)):
        p = StepProfiler()
        for _ in p.iterate([batch, batch]):
            pass
        j = p.json()
        assert j["items_counted"] is True and j["items"] == 2 * want, (batch, j["items"])


def test_iterate_says_it_cannot_count_a_list_of_one_shape():
    """A list of arrays of one rank and one first dimension — one utterance's mel in a list (a
    batch of one), utterances of equal length, or a batch's input and target of one shape — does
    not say how many utterances it holds: it was counted by the first array's first dimension (90
    utterances for one mel of 90 frames, 90 for three). Now it is not counted, the profile says
    its utterances are estimated, and a warning says why once; after a list of utterances of
    different lengths in the same iterate(), one of that rank is utterances too (the short last
    batch); items= says it outright."""
    mel = lambda t: np.zeros((t, 80), np.float32)  # noqa: E731
    for batch, shape in (([mel(90)], r"1 array of shape \(90, 80\): 1 utterance, or the tensors "
                                     r"of one batch of 90"),
                         ([mel(90)] * 3, r"3 arrays of shape \(90, 80\): 3 utterances of equal "
                                         r"length, or the tensors of one batch of 90"),
                         ({"mels": [mel(7)]}, r"its \"mels\", a list of 1 array of shape \(7, 80\)"),
                         ((np.zeros((4, 9, 80)), np.zeros((4, 9, 80))), r"a tuple of 2 arrays")):
        p = StepProfiler(items_per_step=4)
        with pytest.warns(RuntimeWarning) as got:
            for _ in p.iterate([batch, batch]):
                pass
        assert len(got) == 1, [str(w.message) for w in got]  # once per iterate()
        assert re.search(r"^featcache: StepProfiler.iterate: step 1: cannot tell how many "
                         r"utterances the batch holds \(.*" + shape + r".*\): it is not counted, .*"
                         r"items=len .* items=lambda b: len\(b\[0\]\)", str(got[0].message)), \
            str(got[0].message)
        j = p.json()
        assert j["items_counted"] is False and j["items"] == 8, (batch, j["items"])
        assert batch_items(batch) is None
        if isinstance(batch, dict):
            told = ((lambda b: len(b["mels"]), 2),)
        else:
            told = ((len, 2 * len(batch)), (lambda b: len(b[0]), 2 * len(batch[0])))
        for items, want in told:
            p = StepProfiler()
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                for _ in p.iterate([batch, batch], items=items):
                    pass
            assert p.json()["items"] == want
    # a list of utterances, then the short last batch of one (or of equal lengths): counted
    for last, n in (([mel(50)], 1), ([mel(50), mel(50)], 2)):
        p = StepProfiler()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in p.iterate([[mel(60), mel(70), mel(80)], last]):
                pass
        j = p.json()
        assert j["items_counted"] is True and j["items"] == 3 + n, j["items"]
    # but not after lists of another rank (waveforms [T_i], then a mel [T, 80])
    p = StepProfiler()
    with pytest.warns(RuntimeWarning, match="step 2: "):
        for _ in p.iterate([[np.zeros(5), np.zeros(6)], [mel(50)]]):
            pass
    assert p.json()["items_counted"] is False


def test_add_refuses_more_time_than_the_step_has_lasted():
    """add() takes milliseconds this step spent in a phase: more than the open step has lasted
    (microseconds passed as ms, another thread's time that overlapped the step) is refused,
    naming the numbers; it used to be recorded, and the verdict read 'highly input-bound (data
    share 601.5 % of the step)', the phases summing past the step."""
    prof = StepProfiler()
    with prof.step():
        time.sleep(0.002)
        prof.add("data", 1.0)            # 1 of >= 2 ms: fine
        with pytest.raises(ValueError, match=r"add\('data', 60000 ms\): the open step has "
                                             r"lasted [0-9.]+ ms, 1 ms of it already added"):
            prof.add("data", 60000.0)    # (a minute: no loaded machine makes the step that long)
        with pytest.raises(ValueError, match=r"add\('h2d', 90000 ms\)"):
            prof.add("h2d", 90000)       # any phase: the step's phases add up to its time
    assert prof.steps == 1
    share, v = prof.verdict()
    assert 0 < share <= 1, (share, v)
    assert prof.series("data")[0] == pytest.approx(1.0)
    assert sum(prof.series(n)[0] for n in prof.phases()) <= prof.series("(step)")[0]
    # what is not a time at all: ValueError naming it (it was ProfilerError 'FC_ECONFIG: invalid
    # configuration', which named nothing), before the step is touched
    with prof.step():
        for bad in (-1.0, float("nan"), float("inf")):
            with pytest.raises(ValueError, match=r"add\('data', %s\): want a number of ms >= 0"
                                                 % ("%g" % bad)):
                prof.add("data", bad)
            with pytest.raises(ValueError, match=r"add_device\('gpu', %s\): want a number of "
                                                 r"ms >= 0" % ("%g" % bad)):
                prof.add_device("gpu", bad)
            with pytest.raises(ValueError, match=r"count\(%s\): want a number >= 0" % ("%g" % bad)):
                prof.count(bad)
        with pytest.raises(ValueError, match=r"^featcache: add\('50%', -1\): want a number"):
            prof.add("50%", -1)  # (a % in the name: the message is still made)
    assert prof.steps == 2 and prof.series("data")[1] == 0
    prof.close()


def test_a_library_path_that_is_wrong_is_named():
    """FEATCACHE_LIBRARY naming no file: the profiler said 'libfeatcache_core.so not found (set
    FEATCACHE_LIBRARY); ' (nothing tried named), to a user who had set it; it says what the
    package's loader says, naming the path it tried."""
    import subprocess
    env = dict(os.environ, FEATCACHE_LIBRARY="/nonexistent/libfeatcache_core.so.0")
    r = subprocess.run([sys.executable, "-c", "from featcache.profiler import StepProfiler\n"
                        "StepProfiler()"], env=env, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("OSError: featcache: cannot load libfeatcache_core.so.0"), last
    assert "/nonexistent/libfeatcache_core.so.0: " in last, last


def test_names_that_are_no_str_are_named():
    # a label, data phase or phase name that is not a str raised AttributeError "'int' object
    # has no attribute 'encode'", naming neither the argument nor what it takes
    with pytest.raises(TypeError, match=r"^featcache: label 5: want a str$"):
        StepProfiler(label=5)
    with pytest.raises(TypeError, match=r"^featcache: data_phase b'data': want a str$"):
        StepProfiler(data_phase=b"data")
    prof = StepProfiler()
    with prof.step():
        with pytest.raises(TypeError, match=r"^featcache: phase name 3: want a str$"):
            prof.begin(3)
        with pytest.raises(TypeError, match=r"^featcache: phase name None: want a str$"):
            prof.add(None, 0.0)
        with pytest.raises(ValueError, match=r"^featcache: phase name 'x\\udce9': not UTF-8$"):
            prof.begin("x\udce9")  # (was UnicodeEncodeError)
    assert prof.steps == 1
    prof.close()


def test_a_profiler_error_pickles():
    # as FeatcacheError: its code and message kept (pickle.loads raised TypeError, __init__
    # wanting code and what)
    import pickle
    from featcache.profiler import ProfilerError
    prof = StepProfiler()
    with pytest.raises(ProfilerError) as e:
        prof.end_step()
    back = pickle.loads(pickle.dumps(e.value))
    assert type(back) is ProfilerError and (back.code, str(back)) == (e.value.code, str(e.value))
    prof.close()


def test_phases_and_steps_are_decorators():
    """@prof.phase("forward") on a function makes each call of it that phase, @prof.step() on the
    function that runs a step makes each call a step (a TypeError before: '_Phase' object is not
    callable); a call raising leaves the step dropped as the with block does."""
    prof = StepProfiler()

    @prof.phase("data")
    def fetch(n):
        time.sleep(0.002)
        return n

    @prof.phase("compute")
    def compute(x):
        with prof.phase("inner"):
            return x * 2

    @prof.step()
    def train_step(i):
        if i == 2:
            raise RuntimeError("bad batch")
        return compute(fetch(i))

    assert [train_step(i) for i in (0, 1)] == [0, 2]
    with pytest.raises(RuntimeError):
        train_step(2)
    assert train_step(3) == 6
    assert prof.steps == 3 and sorted(prof.phases()) == ["compute", "data", "inner"]
    assert all(ms >= 2 for ms in prof.series("data")), prof.series("data")
    assert fetch.__name__ == "fetch"  # functools.wraps
    prof.close()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
