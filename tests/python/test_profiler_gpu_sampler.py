"""The GPU-utilization sampler (StepProfiler(gpu_busy=True), C fc_gpu_sampler_*) run for real — its
thread, its NVML calls through dlopen, what the profile then says — against a stand-in for the
driver's NVML (tests/stub/fake_nvml.c, loaded by path first: the sampler's
dlopen("libnvidia-ml.so.1") finds it by its soname), so it runs on machines without a GPU."""
import ctypes
import os
import sys
import time

import pytest

try:
    from featcache.profiler import StepProfiler, load_library
    load_library()
except OSError as e:  # the library is not built in this tree
    print("FAIL: %s" % e)
    sys.exit(1)

NVML = ctypes.CDLL(os.environ["FC_FAKE_NVML"], mode=ctypes.RTLD_GLOBAL)
NVML.fake_nvml_calls.restype = ctypes.c_uint
UUID = "GPU-0000000%d-fa4e-4e11-8000-00000000000%d"  # the fake's UUID of GPU i


def wait_samples(k, timeout=20.0):
    """Until the fake NVML was asked k more times (a loaded machine may be slow to run the
    sampler's thread; the test waits, it does not time it)."""
    want = NVML.fake_nvml_calls() + k
    t_end = time.monotonic() + timeout
    while NVML.fake_nvml_calls() < want:
        assert time.monotonic() < t_end, "the sampler took fewer than %d samples in %g s" % (k, timeout)
        time.sleep(0.005)


def steps(prof, n):
    for _ in range(n):
        with prof.step():
            with prof.phase("data"):
                pass


def gpu(prof):
    return prof.json()["gpu_busy"]


def test_every_report_holds_the_samples_until_then():
    """A loop that reads its profile every N steps: each report has the GPU busy of the run until
    then. The sampler used to stop at the first report(), and every later report repeated the
    first N steps' figure as the whole run's."""
    NVML.fake_nvml_set_util(20)
    with StepProfiler(gpu_busy=True, gpu_period_ms=2) as prof:
        steps(prof, 3)
        wait_samples(5)
        first = gpu(prof)
        assert first["measured"] is True and first["note"] == "NVML GPU 0", first
        assert first["period_ms"] == 2 and first["pct"]["mean"] == 20 and first["samples"] >= 5
        line = [l for l in prof.report().splitlines() if l.startswith("gpu busy")]
        assert line and line[0].startswith("gpu busy: mean 20.0 %, p50 20.0 %, min 20.0 % ("), line
        NVML.fake_nvml_set_util(80)
        steps(prof, 3)
        wait_samples(first["samples"] + 5)
        second = gpu(prof)
        assert second["samples"] > 2 * first["samples"], (first, second)
        assert 20 < second["pct"]["mean"] < 80 and second["pct"]["max"] == 80, second
        assert prof.steps == 6


def test_stopped_sampler_keeps_its_figure():
    """stop_gpu_sampler() ends the sampling: later reports (after evaluation, say) hold the
    samples until the stop and no more."""
    NVML.fake_nvml_set_util(50)
    with StepProfiler(gpu_busy=True, gpu_period_ms=2) as prof:
        steps(prof, 2)
        wait_samples(4)
        prof.stop_gpu_sampler()
        n = gpu(prof)["samples"]
        calls = NVML.fake_nvml_calls()
        time.sleep(0.05)
        assert NVML.fake_nvml_calls() == calls, "the sampler's thread went on after the stop"
        again = gpu(prof)
        assert again["measured"] is True and again["samples"] == n and again["pct"]["mean"] == 50


def test_saved_profile_holds_the_samples(tmp_path):
    import json
    NVML.fake_nvml_set_util(35)
    with StepProfiler(gpu_busy=True, gpu_period_ms=2) as prof:
        steps(prof, 2)
        wait_samples(3)
        prof.save(str(tmp_path / "p.json"))
        saved = json.loads((tmp_path / "p.json").read_text())["gpu_busy"]
        assert saved["measured"] is True and saved["pct"]["mean"] == 35 and saved["samples"] >= 3


def test_a_gpu_the_driver_lacks_is_said():
    with StepProfiler() as prof:
        assert prof.start_gpu_sampler(3) is False
        steps(prof, 1)
        assert gpu(prof) == {"measured": False, "note": "NVML: GPU 3: Invalid Argument"}


def test_a_driver_that_fails_to_start_is_said():
    NVML.fake_nvml_set_init_error(9)
    try:
        with StepProfiler(gpu_busy=True) as prof:
            steps(prof, 1)
            assert gpu(prof) == {"measured": False,
                                 "note": "NVML not usable: nvmlInit: Driver Not Loaded"}
            assert "gpu busy: not measured (NVML not usable: nvmlInit: Driver Not Loaded)" in \
                prof.report()
    finally:
        NVML.fake_nvml_set_init_error(0)


def test_period_out_of_range_is_the_callers_mistake():
    with StepProfiler() as prof:
        with pytest.raises(ValueError, match=r"sampling period 0.5 ms out of range \(1 \.\. 60000\)"):
            prof.start_gpu_sampler(0, period_ms=0.5)


@pytest.fixture
def three_gpus(monkeypatch):
    """The fake driver with 3 GPUs, GPU 2 at 70 %, the others at 10 %."""
    NVML.fake_nvml_set_devices(3)
    NVML.fake_nvml_set_util(10)
    NVML.fake_nvml_set_util_of(2, 70)
    yield monkeypatch
    NVML.fake_nvml_set_devices(1)


@pytest.mark.parametrize("visible", ["2", "2,0", UUID % (2, 2), UUID % (2, 2) + "," + UUID % (0, 0),
                                     "GPU-00000002"])
def test_the_default_gpu_is_cuda_visible_devices_first(three_gpus, visible):
    """CUDA_VISIBLE_DEVICES names the GPUs by index or by UUID (whole, or its first digits, as
    CUDA takes them). A UUID was read as no number and GPU 0 sampled instead, silently: another
    job's GPU, or an idle one. The UUID is found through NVML."""
    three_gpus.setenv("CUDA_VISIBLE_DEVICES", visible)
    with StepProfiler(gpu_busy=True, gpu_period_ms=2) as prof:
        steps(prof, 1)
        wait_samples(3)
        g = gpu(prof)
        assert g["measured"] is True and g["pct"]["mean"] == 70, g
        first = visible.split(",")[0]
        more = ",..." if "," in visible else ""
        assert g["note"] == ("NVML GPU 2" if first.isdigit() else
                             "NVML GPU 2 (CUDA_VISIBLE_DEVICES=%s%s)" % (first, more)), g


def fake_torch(monkeypatch, current):
    """torch as a DDP rank holds it after torch.cuda.set_device(current) (a stand-in: the tests'
    torch has no CUDA); current=None: one whose current_device() raises (a forked child);
    current="uninitialized": one that has not initialized CUDA yet, whose current_device()
    would (a CUDA context on GPU 0, in every rank that made its profiler before set_device)."""
    import types
    calls = []

    def current_device():
        calls.append(current)
        if current is None:
            raise RuntimeError("Cannot re-initialize CUDA in forked subprocess")
        return 0 if current == "uninitialized" else current
    cuda = types.SimpleNamespace(is_available=lambda: True, current_device=current_device,
                                 is_initialized=lambda: current != "uninitialized")
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    return calls


@pytest.mark.parametrize("visible,current,note", [
    (None, 2, "NVML GPU 2 (cuda:2)"),
    (None, 0, "NVML GPU 0"),
    (None, None, "NVML GPU 0"),
    (None, "uninitialized", "NVML GPU 0"),
    ("0,2", 1, "NVML GPU 2 (cuda:1 of CUDA_VISIBLE_DEVICES=0,2)"),
    ("2,0", 0, "NVML GPU 2"),
    (UUID % (0, 0) + "," + UUID % (2, 2), 1,
     "NVML GPU 2 (cuda:1 of CUDA_VISIBLE_DEVICES=%s,%s)" % (UUID % (0, 0), UUID % (2, 2))),
])
def test_the_default_gpu_is_the_current_cuda_device(three_gpus, visible, current, note):
    """Each DDP rank calls torch.cuda.set_device(local_rank): its sampler samples that GPU (the
    entry of its place in CUDA_VISIBLE_DEVICES where that is set). Every rank sampled GPU 0 (or
    the list's first) and reported rank 0's GPU as its own."""
    if visible is None:
        three_gpus.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        three_gpus.setenv("CUDA_VISIBLE_DEVICES", visible)
    calls = fake_torch(three_gpus, current)
    with StepProfiler(gpu_busy=True, gpu_period_ms=2) as prof:
        steps(prof, 1)
        wait_samples(3)
        g = gpu(prof)
        assert g["measured"] is True and g["note"] == note, g
        assert g["pct"]["mean"] == (70 if note.startswith("NVML GPU 2") else 10), g
    assert "uninitialized" not in calls, "current_device() asked before CUDA was initialized"


def test_a_current_device_past_the_list_is_said(three_gpus):
    three_gpus.setenv("CUDA_VISIBLE_DEVICES", "2")
    fake_torch(three_gpus, 1)
    with StepProfiler(gpu_busy=True, gpu_period_ms=2) as prof:
        steps(prof, 1)
        assert gpu(prof) == {"measured": False, "note": "cuda:1 of CUDA_VISIBLE_DEVICES=2: the "
                             "list names no GPU 1 (pass start_gpu_sampler(index), gpu_index=)"}


@pytest.mark.parametrize("visible,why", [
    ("MIG-4f0a3f04-3a8b-5d8a-9c62-1b2c3d4e5f60",
     "CUDA_VISIBLE_DEVICES=MIG-4f0a3f04-3a8b-5d8a-9c62-1b2c3d4e5f60: a MIG instance, whose "
     "utilization NVML does not report (pass start_gpu_sampler(index), gpu_index=, its GPU's "
     "index)"),
    ("MIG-GPU-00000001-fa4e-4e11-8000-000000000001/1/0,1",
     "CUDA_VISIBLE_DEVICES=MIG-GPU-00000001-fa4e-4e11-8000-000000000001/1/0,...: a MIG "
     "instance, whose utilization NVML does not report (pass start_gpu_sampler(index), "
     "gpu_index=, its GPU's index)"),
    ("GPU-00000007", "CUDA_VISIBLE_DEVICES=GPU-00000007: no GPU of NVML's 3 has that UUID "
     "(pass start_gpu_sampler(index), gpu_index=)"),
    ("GPU-0000000", "CUDA_VISIBLE_DEVICES=GPU-0000000: GPUs 0, 1, 2 all have UUIDs starting so "
     "(pass start_gpu_sampler(index), gpu_index=)"),
    ("", "CUDA_VISIBLE_DEVICES=: this process sees no GPU (it names none)"),
    ("-1", "CUDA_VISIBLE_DEVICES=-1: this process sees no GPU ('-1' is neither a GPU index nor "
     "a UUID)"),
])
def test_a_default_gpu_nvml_cannot_sample_is_said(three_gpus, visible, why):
    """A MIG instance, a UUID of no GPU (or of several), no GPU at all: nothing sampled, and the
    report says why, rather than GPU 0's figure as this process's."""
    three_gpus.setenv("CUDA_VISIBLE_DEVICES", visible)
    calls = NVML.fake_nvml_calls()
    with StepProfiler(gpu_busy=True, gpu_period_ms=2) as prof:
        steps(prof, 1)
        assert gpu(prof) == {"measured": False, "note": why}
        assert "gpu busy: not measured (%s)" % why in prof.report()
        assert prof.start_gpu_sampler(1) is True  # (an index given: sampled)
    assert NVML.fake_nvml_calls() > calls


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
