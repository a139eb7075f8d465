#!/usr/bin/env bash
# A name that is not UTF-8 (a Latin-1 file, manifest or store from an old archive) in the tools'
# messages: quoted, each byte that is no part of a UTF-8 character written \xNN, as the id made
# from such a file name holds it (featurize: "caf\xe9.wav": stored as "caf\\xe9"), so that stderr
# stays valid UTF-8 (a log, a CI page, Python's text mode) and one tool names a file as the next
# does. They printed the raw byte. --json has U+FFFD for such bytes (featurize_odd_names).
# cache-merge and loader-bench, and the library's reasons that name a store (the loader's, a
# split store's, a merge's), printed stores as they are, a newline in one breaking the line.
set -u
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# utf8 FILE: the file is valid UTF-8
utf8() { "$PY" -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$1" 2>/dev/null; }
# has FILE LINE: FILE holds LINE, and is UTF-8
has() {
  grep -qxF -- "$2" "$1" || fail "want: $2
got: $(cat -v "$1")"
  utf8 "$1" || fail "not UTF-8: $(cat -v "$1")"
}
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
lat=$(printf 'caf\351')
cp a.wav "$lat.wav"
printf 'junk' >"j$lat.wav"

# featurize: the inputs, and -v's ids
"$B/featurize" -v --device cpu -o s "$lat.wav" "j$lat.wav" "m$lat.wav" 2>err
rc=$?
[ $rc = 1 ] || fail "featurize: exit $rc"
has err 'featurize: "caf\xe9.wav": stored as "caf\\xe9" (43 frames, 0.50 s)'
has err 'featurize: "jcaf\xe9.wav": not an audio file (libsndfile: Format not recognised.)'
has err 'featurize: "mcaf\xe9.wav": No such file or directory'
# a manifest's name in FILE:LINE
printf 'a.wav\na.wav\n' >"l$lat.txt"
"$B/featurize" --device cpu -o s2 --manifest "l$lat.txt" 2>err
has err "featurize: \"lcaf\\xe9.txt\":2: duplicate id 'a'"
# tokenize names its manifest alike
: >"e$lat.csv"
"$B/tokenize" --build-vocab -o t --manifest "e$lat.csv" 2>err
has err 'tokenize: nothing to do: "ecaf\xe9.csv" holds no lines'
printf 'a|x\na|y\n' >"d$lat.csv"
"$B/tokenize" --build-vocab -o t --manifest "d$lat.csv" 2>err
has err "tokenize: \"dcaf\\xe9.csv\":2: duplicate id 'a'"

# the store's name: cache-verify (its report on stdout too), cache-prune, cache-config
mv s "s$lat"
"$B/cache-verify" "s$lat" "n$lat" >out 2>err
has err 'cache-verify: "ncaf\xe9": cannot open the store: No such file or directory'
utf8 out || fail "cache-verify's report is not UTF-8: $(cat -v out)"
grep -q '^"scaf\\xe9": 0 errors' out || fail "cache-verify's report: $(cat -v out)"
"$B/cache-prune" "n$lat" 2>err
has err 'cache-prune: "ncaf\xe9": cannot open the store: No such file or directory'
"$B/cache-config" "n$lat" 2>err
has err 'cache-config: "ncaf\xe9": cannot open the store: No such file or directory'
cp -r "s$lat" "c$lat"
"$B/cache-config" --drop hifigan "c$lat" 2>err
grep -q '^cache-config: dropped config [0-9a-f]\{32\} from "ccaf\\xe9": [0-9]* records\{0,1\}, ' err ||
  fail "cache-config --drop: $(cat -v err)"
utf8 err || fail "cache-config --drop: not UTF-8"

# cache-merge: its own lines (a conflict, the summary) and the library's (a store given twice);
# a newline in a store's name stays inside the quotes
nl=$'\n'
mkdir d && sox -n -r 22050 -b 16 d/a.wav synth 0.3 sine 500
"$B/featurize" -q --device cpu -o "t${nl}x" d/a.wav || fail "featurize t"
"$B/featurize" -q --device cpu -o s3 a.wav || fail "featurize s3"
"$B/cache-merge" -o "o$lat" s3 "t${nl}x" 2>err
grep -q "^cache-merge: \"t\\\\nx\": audio entry 'a' differs from s3's: different audio: .*; refused\$" err ||
  fail "merge conflict: $(cat -v err)"
utf8 err || fail "merge conflict: not UTF-8"
"$B/cache-merge" -o "o$lat" s3 2>err
grep -q '^cache-merge: done: 4 of 4 entries in "ocaf\\xe9" (' err || fail "merge done: $(cat -v err)"
"$B/cache-merge" -o o2 "s$lat" "s$lat" 2>err
has err 'cache-merge: "scaf\xe9": given twice (also as "scaf\xe9")'
"$B/cache-merge" -o o2 "n$lat" 2>err
has err 'cache-merge: "ncaf\xe9": cannot open the store: No such file or directory'
# loader-bench: a store it cannot open, named once
"$B/loader-bench" "n$lat" 2>err
has err 'loader-bench: "ncaf\xe9": No such file or directory'
[ "$(wc -l <err)" = 1 ] || fail "loader-bench: $(cat -v err)"
# its manifest's FILE:LINE as featurize's and tokenize's: the name quoted, the line outside
printf 'a.wav\na.wav\n' >"l$lat.scp.txt"
"$B/loader-bench" --source audio --manifest "l$lat.scp.txt" --steps 1 >/dev/null 2>err
has err "loader-bench: \"lcaf\\xe9.scp.txt\":2: duplicate id 'a'"
"$B/loader-bench" "t${nl}x" "t${nl}x" 2>err
has err 'loader-bench: "t\nx": given twice (also as "t\nx")'
# the library's reason names the store as the tool does: once, quoted (it printed the name raw,
# the newline breaking the line, after the tool's quoted one)
"$B/loader-bench" --features kaldi "t${nl}x" 2>err
has err 'loader-bench: "t\nx": no mel config named '"'kaldi'"' in the store (it has: hifigan)'
# a split store's reason
"$B/featurize" -q --device cpu --writers 2 -o "p$lat" a.wav || fail "featurize --writers 2"
"$B/featurize" -q --device cpu --writers 3 -o "p$lat" a.wav 2>err
has err 'featurize: "pcaf\xe9" is split into 2 parts, not 3: give 2 writers or none'
"$B/featurize" -q --device cpu -o "p$lat/part-1" a.wav 2>err
has err 'featurize: "pcaf\xe9/part-1" is part 1 of a split store of 2 parts: give the split store'"'"'s directory'
# a part of it as cache-merge's output: named quoted, as the tool names it
"$B/cache-merge" -q -o "p$lat/part-1" s3 2>err
has err 'cache-merge: "pcaf\xe9/part-1": cannot open the output store: it is part 1 of a split store of 2 parts, which holds only the ids routed to it; merge into a plain store'
# stores of other vocabularies, each named in the line that says so
printf 'a|ab\n' >t1.csv && printf 'b|cd\n' >t2.csv
"$B/tokenize" -q --build-vocab -o "w${nl}x" t1.csv && "$B/tokenize" -q --build-vocab -o w1 t2.csv ||
  fail "tokenize w"
"$B/cache-merge" -q -o mw "w${nl}x" w1 2>err
grep -Eq "^cache-merge: the inputs hold 2 different 'chars' token configs, in 2 stores \(.*[0-9a-f]{12} in \"w\\\\nx\"[;)]" err ||
  fail "merge of other vocabularies: $(cat -v err)"
# a marker that is not one, named whole (the directory with the marker's name, as one path)
mkdir "b${nl}x" && printf 'featcache-split/1 03\n' >"b${nl}x/featcache-split"
"$B/featurize" -q --device cpu -o "b${nl}x" a.wav 2>err
has err 'featurize: "b\nx/featcache-split": not a split-store marker (featcache-split/1 N)'
"$B/cache-verify" "b${nl}x" 2>err
has err 'cache-verify: "b\nx/featcache-split": not a split-store marker (featcache-split/1 N)'
"$B/loader-bench" "b${nl}x" 2>err
has err 'loader-bench: "b\nx/featcache-split": not a split-store marker (featcache-split/1 N)'

# a BOM that is not the list's first bytes (two lists concatenated, each saved with one) is part
# of the name, and shown: the bare name seemed to exist
printf '\xef\xbb\xbfa.wav\n' >b1.txt
cat b1.txt b1.txt | "$B/featurize" --device cpu -o s5 - 2>err
has err 'featurize: "\ufeffa.wav": No such file or directory'
# a direction override in a name cannot make the line show another name
cp a.wav "$(printf 'x\342\200\256vaw.exe.wav')"
"$B/featurize" -v --device cpu -o s6 "$(printf 'x\342\200\256vaw.exe.wav')" 2>err
has err 'featurize: "x\u202evaw.exe.wav": stored as "x\u202evaw.exe" (43 frames, 0.50 s)'

[ $fails = 0 ] || exit 1
echo "names_not_utf8: ok"
