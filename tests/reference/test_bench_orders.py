"""cache-bench: the patterns visit exactly the records they claim, and --json carries every field.

Orders are checked against an independent model of the store: key order from py-lmdb's cursor,
map order from the addresses py-lmdb's buffers have in its map (test_bench_fixture.addresses).
The visited keys come from --dump-order, written by the readers as they read.
"""
import collections
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_bench_fixture import (addresses, json_lines, key_order, make_store, require_tool,  # noqa: E402
                                run_bench)

N, B = 150, 4  # small records keep it fast; the order logic does not care about the size


def dump(store, tmp, *extra):
    path = os.path.join(tmp, "order.txt")
    _, out, _ = run_bench("--json", "-q", "-s", "warm", "-b", B, "--dump-order", path, *extra,
                          store)
    visits = collections.OrderedDict()
    with open(path) as f:
        for line in f:
            idx, pattern, state, batch, threads, key = line.split()
            if idx == "probe":  # the HDD-or-SSD probe's reads (test_probe_reads_file_order)
                continue
            visits.setdefault((int(idx), pattern, int(batch)), []).append(bytes.fromhex(key))
    return visits, json_lines(out)


def test_probe_reads_file_order():
    """The probe that tells an HDD from an SSD compares reads in file order with random ones. Key
    order is the content hashes' order, as scattered over the disk as a random one: the probe's
    first part read in key order measured two random orders, and a disk that seeks came out
    SSD-like. It reads in map order (a prefix of it: the probe stops after a second)."""
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "s")
        make_store(store, N, frames=20, mels=80)
        keys = key_order(store)
        addr = addresses(store)
        physical = sorted(keys, key=lambda k: addr[k])
        path = os.path.join(tmp, "order.txt")
        _, out, _ = run_bench("--json", "-q", "-p", "sequential", "-s", "warm", "-b", 1,
                              "--dump-order", path, store)
        summary = [o for o in json_lines(out) if o["record"] == "summary"][0]
        probe = collections.defaultdict(list)
        with open(path) as f:
            for line in f:
                idx, pattern, state, batch, threads, key = line.split()
                if idx == "probe":
                    assert (state, batch, threads) == ("cold", "1", "1"), line
                    probe[pattern].append(bytes.fromhex(key))
        if summary["probe"] is None:  # tmpfs, or no O_DIRECT here: nothing to check
            assert not probe, probe.keys()
            return
        assert list(probe) == ["physical", "random"], list(probe)
        got = probe["physical"]
        assert got and got == physical[:len(got)], "the probe's first part must read in file order"
        assert len(got) == summary["probe"]["sequential"]["records"]
        assert len(probe["random"]) == summary["probe"]["random"]["records"]


def test_patterns_visit_what_they_claim():
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "s")
        make_store(store, N, frames=20, mels=80)
        keys = key_order(store)
        addr = addresses(store)
        physical = sorted(keys, key=lambda k: addr[k])
        assert physical != keys, "fixture should have map order != key order"
        visits, objs = dump(store, tmp)
        passes = [o for o in objs if o["record"] == "pass"]
        assert len(visits) == len(passes) == 8
        for (idx, pattern, batch), got in visits.items():
            assert len(got) == N and set(got) == set(keys), f"{pattern} b{batch}: not a permutation"
            p = passes[idx]
            assert p["pattern"] == pattern and p["batch"] == batch and p["records"] == N
            if pattern == "sequential":
                assert got == keys, "sequential must be key order"
            elif pattern == "physical":
                assert got == physical, "physical must be map order"
            elif pattern == "random":
                assert got != keys and got != physical
            elif pattern == "locality":
                run = 16 * batch  # the loader's default run: 16 batches
                pos = {k: i for i, k in enumerate(physical)}
                # every batch is read in address order
                for s in range(0, N, batch):
                    chunk = [pos[k] for k in got[s:s + batch]]
                    assert chunk == sorted(chunk), f"locality b{batch}: batch at {s} not in address order"
                # the runs are the map's runs (run-aligned stretches of map order), each visited
                # as one block: a run's records sit within its length of each other in the
                # visiting order, give or take the batches that straddle two runs (sorted by
                # address, they may swap records across the boundary, as the loader's do)
                where = collections.defaultdict(list)
                for i, k in enumerate(got):
                    where[pos[k] // run].append(i)
                assert sorted(where) == list(range((N + run - 1) // run))
                for rid, idx in where.items():
                    length = min(run, N - rid * run)
                    assert len(idx) == length
                    assert max(idx) - min(idx) + 1 <= length + 2 * (batch - 1), \
                        f"locality b{batch}: map run {rid} is spread over {min(idx)}..{max(idx)}"
                firsts = sorted(where, key=lambda rid: min(where[rid]))
                assert firsts != sorted(firsts), "runs should come shuffled"
                assert got != physical


def test_random_is_seeded():
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "s")
        make_store(store, 60, frames=10, mels=80)
        a, _ = dump(store, tmp, "-p", "random,locality", "--seed", "7")
        b, _ = dump(store, tmp, "-p", "random,locality", "--seed", "7")
        c, _ = dump(store, tmp, "-p", "random,locality", "--seed", "8")
        assert list(a.values()) == list(b.values()), "same seed, same order"
        assert list(a.values())[0] != list(c.values())[0], "another seed, another order"


def test_threads_and_byte_bound_visit_each_record_once():
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "s")
        make_store(store, N, frames=20, mels=80)
        visits, objs = dump(store, tmp, "-p", "random", "-t", "2")
        for got in visits.values():
            assert len(got) == N and len(set(got)) == N
        # a byte bound stops the pass early: a prefix of the order, in whole batches
        full, _ = dump(store, tmp, "-p", "sequential", "-t", "1")
        part, objs = dump(store, tmp, "-p", "sequential", "-t", "1", "--bytes", 20 * 80 * 4 * 10)
        for (k1, got), (k2, ref) in zip(part.items(), full.items()):
            assert got == ref[:len(got)] and 10 <= len(got) < N
        assert all(o["stopped"] == "bytes" for o in objs if o["record"] == "pass")


PASS_FIELDS = {"record", "store", "device", "rotational", "pattern", "cache_state", "threads",
               "mb_per_s", "decoded_mb_per_s", "records_per_s", "latency_ms", "resident_fraction_before", "batch",
               "batches_per_s", "batch_latency_ms", "io", "disk", "cold_verified", "time_split",
               "major_faults", "minor_faults", "records", "batches", "bytes", "bad_records",
               "gone_records",
               "seconds", "stopped"}
SUMMARY_FIELDS = {"record", "store", "device", "disk", "rotational", "kind", "model", "fs_type",
                  "mount_point", "read_only", "read_ahead_kb", "note", "stores", "records",
                  "payload_bytes", "file_bytes", "step_ms", "batch", "batch_records", "batches_per_s", "gpus",
                  "need_batches_per_s", "keeps_up", "max_gpus", "min_step_ms", "warm_batches_per_s",
                  "disk_behaviour", "random_vs_sequential", "random_record_ms_p50", "probe",
                  "verdict", "recommendations"}


def test_json_carries_every_field():
    with tempfile.TemporaryDirectory() as tmp:
        s1, s2 = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        make_store(s1, 30, frames=50)
        make_store(s2, 20, frames=50, seed=3)
        _, out, err = run_bench("--json", "-t", "1,2", "-b", 8, "--duration", 1, "--step-ms", 80,
                                "--separate", s1, s2)
        assert err.strip().splitlines()[-1] == "cache-bench: done: 64 of 64 passes"
        objs = json_lines(out)
        for store in (s1, s2):
            passes = [o for o in objs if o["record"] == "pass" and o["store"] == store]
            summary = [o for o in objs if o["record"] == "summary" and o["store"] == store]
            assert len(passes) == 4 * 2 * 2 * 2 and len(summary) == 1
            combos = {(p["pattern"], p["cache_state"], p["threads"], p["batch"]) for p in passes}
            assert len(combos) == 32
            for p in passes:
                assert set(p) == PASS_FIELDS, set(p) ^ PASS_FIELDS
                assert set(p["latency_ms"]) == {"p50", "p95", "p99", "max"}
                assert set(p["batch_latency_ms"]) == {"p50", "p95", "p99", "max"}
                lat = p["latency_ms"]
                assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"]
                assert p["mb_per_s"] > 0 and p["records_per_s"] > 0
                assert abs(p["mb_per_s"] - p["bytes"] / p["seconds"] / 1e6) <= 1e-3 * p["mb_per_s"]
                split = p["time_split"]
                assert abs(sum(split.values()) - 1) < 1e-3 and min(split.values()) >= 0
                assert p["rotational"] in (True, False, None)
                assert 0 <= p["resident_fraction_before"] <= 1
            s = summary[0]
            assert set(s) == SUMMARY_FIELDS, set(s) ^ SUMMARY_FIELDS
            assert s["step_ms"] == 80 and s["batch"] == 8
            assert s["verdict"].startswith(f"{store} ") and "batches/s of 8 (" in s["verdict"]
            # the verdict's rate model: 1 GPU at 80 ms needs 12.5 batches/s; it keeps up when
            # the rate quoted reaches that, and max_gpus is what the rate feeds
            assert s["gpus"] == 1 and s["need_batches_per_s"] == 12.5
            assert s["keeps_up"] == (s["batches_per_s"] >= 12.5)
            assert s["max_gpus"] == int(s["batches_per_s"] * 80 / 1000)
            assert abs(s["min_step_ms"] - 1000 / s["batches_per_s"]) <= 1e-5 * s["min_step_ms"]
            assert ("keeps up with 1 GPU" in s["verdict"]) == s["keeps_up"]


if __name__ == "__main__":
    require_tool()
    import pytest
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
