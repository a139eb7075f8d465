"""prof.phase(name, cuda=...): CUDA events around a phase, their elapsed time its device series.
Run against a stand-in for torch.cuda (the tests' torch has no CUDA): what is checked is which
stream the events are recorded on, and what the profile then holds. cuda=True records on the
current device's stream; cuda=DEVICE on that device's: a DDP loop that moved its model with
.to("cuda:1") without torch.cuda.set_device(1) has cuda:0 current, and events there timed none of
the step's kernels (and the phase's wait covered none of them), with no way to say which device."""
import sys
import time

import pytest

try:
    import torch
    import featcache.profiler as P
    from featcache.profiler import StepProfiler
    P.load_library()
except (ImportError, OSError) as e:  # pragma: no cover
    print("FAIL: %s" % e)
    sys.exit(1)


class Stream:
    def __init__(self, device):
        self.device = device


class Event:
    """Records the stream it was recorded on; elapsed_time: the host time between the two."""
    made = []

    def __init__(self, enable_timing=False):
        assert enable_timing
        self.stream = self.t = None
        Event.made.append(self)

    def record(self, stream=None):
        assert stream is not None, "recorded on no stream given: torch's current device's"
        self.stream, self.t = stream, time.monotonic()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        assert end.stream.device == self.stream.device, "events of two devices"
        return (end.t - self.t) * 1e3


@pytest.fixture
def fake_cuda(monkeypatch):
    """torch.cuda with two devices, cuda:0 current."""
    monkeypatch.setattr(P, "_CUDA", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "Event", Event)

    def current_stream(device=None):
        if device is None:
            return Stream(0)
        d = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
        assert d.type == "cuda", d
        return Stream(0 if d.index is None else d.index)
    monkeypatch.setattr(torch.cuda, "current_stream", current_stream)
    Event.made = []
    yield
    Event.made = []


def devices():
    return [e.stream.device for e in Event.made]


@pytest.mark.parametrize("cuda,dev", [(True, 0), (1, 1), ("cuda:1", 1), (torch.device("cuda", 1), 1),
                                      (0, 0), ("cuda", 0)])
def test_events_go_on_the_devices_stream(fake_cuda, cuda, dev):
    with StepProfiler() as prof:
        for _ in range(3):
            with prof.step():
                with prof.phase("data"):
                    pass
                with prof.phase("compute", cuda=cuda):
                    time.sleep(0.002)
        assert devices() == [dev] * 6, devices()
        d = prof.json()["device_phases"]["compute"]
        assert d["min"] >= 1.5 and d["sum"] >= 4.5, d  # (the sleeps, timed by the events)


def test_as_a_decorator_each_call_has_its_events(fake_cuda):
    with StepProfiler() as prof:
        @prof.phase("fwd", cuda="cuda:1")
        def fwd(k):
            if k:
                fwd(k - 1)
        with prof.step():
            fwd(2)
        assert devices() == [1] * 6


@pytest.mark.parametrize("cuda", ["cpu", "nonsense", 1.5, torch.device("cpu")])
def test_a_device_that_is_no_cuda_device_is_the_callers_mistake(fake_cuda, cuda):
    with StepProfiler() as prof:
        with pytest.raises(ValueError, match=r"phase\('compute', cuda=.*\): want True \(the "
                                             r"current CUDA device\) or a CUDA device"):
            prof.phase("compute", cuda=cuda)


def test_without_cuda_an_ordinary_phase(monkeypatch):
    monkeypatch.setattr(P, "_CUDA", False)
    with StepProfiler() as prof:
        with prof.step():
            with prof.phase("compute", cuda="cuda:1"):
                pass
        assert prof.phases() == ["compute"] and "compute" not in prof.json().get("device_phases", {})


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
