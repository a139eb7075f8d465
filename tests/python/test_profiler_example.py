"""python/examples/train_profiled.py runs: a real tiny PyTorch loop on the CPU under StepProfiler,
on synthetic mels and on a featcache store made by featurize from espeak-ng speech; its report
has every phase, nested ones included, and its trace is valid."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

try:
    from featcache.profiler import load_library
    load_library()
except OSError as e:
    print("FAIL: %s" % e)
    sys.exit(1)

SRC = os.environ.get("FC_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SRC, "python", "examples", "train_profiled.py")


def run(*args):
    r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_synthetic(tmp_path):
    out = run("--steps", "6", "--batch", "4", "--trace", str(tmp_path / "t.json"))
    lines = out.splitlines()
    assert lines[0] == "steps: 6 (times in ms per step; phase time = self time)"
    names = [l.split()[0] for l in lines[2:-1]]
    assert names == ["data", "h2d", "compute", "forward", "backward", "optimizer", "(other)",
                     "(step)"]
    assert lines[-1].startswith("verdict: ")
    tr = json.loads((tmp_path / "t.json").read_text())
    assert sorted(e["args"]["step"] for e in tr["traceEvents"] if e["name"] == "step") == list(range(6))


def test_store(tmp_path):
    fz = os.path.join(os.environ.get("FC_BIN", ""), "featurize")
    assert os.access(fz, os.X_OK), "%s not built" % fz
    assert shutil.which("espeak-ng"), "espeak-ng not installed (scripts/setup installs it)"
    wavs = []
    for i, t in enumerate(["Hello there.", "The cache is warm.", "One more sentence."]):
        w = tmp_path / ("u%d.wav" % i)
        subprocess.run(["espeak-ng", "-w", str(w), t], check=True)
        wavs.append(str(w))
    subprocess.run([fz, "-q", "-o", str(tmp_path / "st"), *wavs], check=True)
    s = json.loads(run(str(tmp_path / "st"), "--steps", "4", "--batch", "2", "--json"))
    assert s["steps"] == 4 and set(s["phases"]) >= {"data", "forward", "backward"}
    assert 0 < s["data_share"] < 1, s  # a share of the step; how small is a benchmark question


def docs_example(page, after):
    """The first indented code block of docs/PAGE after the line `after`, blank lines kept."""
    with open(os.path.join(SRC, "docs", page), encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = lines.index(after) + 1
    while not lines[i].startswith("    "):
        i += 1
    block = []
    while i < len(lines) and (not lines[i] or lines[i].startswith("    ")):
        block.append(lines[i][4:])
        i += 1
    return "\n".join(block)


def test_the_loader_page_example_runs_as_written(tmp_path, monkeypatch):
    """docs/loader.md's StepProfiler loop, with what a reader supplies (a model, its loss and
    optimizer, the device; a store at cache/, smaller batches): it made each featcache batch a
    tensor with torch.as_tensor(batch), which cannot ('Could not infer dtype of LoaderBatch')."""
    torch = pytest.importorskip("torch")  # noqa: F841 (the example's)
    import numpy as np
    from featcache import testing as T
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(3)
    with T.StoreWriter("cache") as w:
        cfg = w.add_config(T.mel_config_json("hifigan"))
        for i in range(6):
            w.add_utterance("u%d" % i, b"%d" % i,
                            rng.standard_normal((int(rng.integers(30, 90)), 80)).astype(np.float32),
                            cfg)
    code = docs_example("loader.md", "## Profiling a training step: `featcache.StepProfiler`")
    code = code.replace('batch_size=32', 'batch_size=2').replace('pad_to=800', 'pad_to=64')
    code = code.replace('prof.save_trace("steps.json")',
                        'prof.save_trace("steps.json"); P.append(prof)')
    setup = ("import featcache, torch\n"
             "device = 'cpu'\n"
             "model = torch.nn.Linear(80, 1)\n"
             "loss_fn = lambda y: y.pow(2).mean()\n"
             "opt = torch.optim.SGD(model.parameters(), lr=0.01)\n")
    P = []
    exec(compile(setup + code, "docs/loader.md", "exec"), {"P": P})
    assert P[0].steps == 3 and P[0].json()["items"] == 6
    assert json.loads((tmp_path / "steps.json").read_text())["traceEvents"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
