"""docs/loader.md's Options table names every keyword featcache.Loader takes, and names none it
does not take: a user reads the table, not the signature (epoch= was missing from it)."""

import inspect
import os
import re
import sys

import pytest

import featcache

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "loader.md")


def table_rows():
    text = open(DOC, encoding="utf-8").read()
    part = text.split("## Options (C field / Python keyword")[1].split("\n## ")[0]
    rows = [line.split("|")[1:-1] for line in part.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in r] for r in rows[2:] if len(r) == 4]  # the header's two rows


def documented_keywords():
    names = set()
    for c, py, _default, _meaning in table_rows():
        if py == "same":
            py = c
        if py.startswith("("):  # no keyword: what Python does instead
            continue
        # "order / shuffle", "verify=True / False", "crop = ... (random_crop=True)", "`featcache.get` ..."
        py = re.sub(r"\(`featcache\.get`[^)]*\)", "", py)
        py = re.sub(r'"[^"]*"', "", py)
        names |= set(re.findall(r"\b([a-z_][a-z0-9_]*)\s*(?:=|/|,|$|\()", py + " "))
    return names - {"true", "false", "none"}


def test_every_keyword_is_in_the_table():
    sig = inspect.signature(featcache.Loader.__init__)
    keywords = {p for p in sig.parameters if p not in ("self", "paths") and not p.startswith("_")}
    missing = keywords - documented_keywords()
    assert not missing, f"Loader keywords the Options table of docs/loader.md lacks: {sorted(missing)}"


def test_the_table_names_no_keyword_loader_lacks():
    sig = inspect.signature(featcache.Loader.__init__)
    extra = documented_keywords() - set(sig.parameters)
    assert not extra, f"docs/loader.md's Options table names keywords Loader does not take: {sorted(extra)}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
