#!/usr/bin/env bash
# featurize on a JSON lines manifest whose NeMo "offset" or "duration" is no number of seconds: a
# string that is none ("2.5s", "", "abc"), a negative number, an array, a boolean. Each was taken
# as no value, and the whole file stored under the line's id without a word. Now the line fails,
# naming the manifest, the line and the field, recorded; the others are stored (exit 1); --strict
# stops at it. A negative offset is said to be one, not called a segment. NaN and Infinity, which
# Python's json.dumps writes, say that they are no JSON numbers. null is none. A string that reads
# whole as a number ("duration": "3.2", every field a string as a CSV turned JSON by pandas or
# csv.DictReader writes it, NeMo reading it with float()) is that number: such a manifest is
# stored whole (it failed every line), and a string offset over 0 is a segment, refused as one.
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
FZ() { timeout -s KILL 60 "$B/featurize" --device cpu "$@"; }
sox -n -r 22050 -b 16 long.wav synth 4 sine 300 && sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 ||
  { echo "FAIL: sox failed"; exit 1; }

cat >m.jsonl <<'EOF'
{"audio_filepath": "long.wav", "id": "s1", "offset": "2.5s", "duration": 1.0}
{"audio_filepath": "long.wav", "id": "s2", "duration": "abc"}
{"audio_filepath": "long.wav", "id": "s3", "duration": -1}
{"audio_filepath": "long.wav", "id": "s4", "offset": -2}
{"audio_filepath": "long.wav", "id": "s5", "offset": NaN}
{"audio_filepath": "long.wav", "id": "s6", "duration": -Infinity}
{"audio_filepath": "long.wav", "id": "s7", "duration": 1e999}
{"audio_filepath": "long.wav", "id": "s8", "duration": [4]}
{"audio_filepath": "long.wav", "id": "s9", "offset": false}
{"audio_filepath": "long.wav", "id": "s10", "offset": ""}
{"audio_filepath": "long.wav", "id": "ok1", "offset": null, "duration": null}
{"audio_filepath": "a.wav", "id": "ok2", "offset": 0, "duration": 1e300}
EOF
FZ -j 1 -o s --manifest m.jsonl >out 2>err
rc=$?
[ $rc = 1 ] || fail "exit $rc, want 1: $(cat err)"
nan=": NaN and Infinity are not JSON numbers (Python's json.dumps writes them; give the number, or leave the field out)"
diff - err <<EOF || fail "messages differ"
featurize: m.jsonl:1: "offset" must be a number (seconds), got a string ("2.5s")
featurize: m.jsonl:2: "duration" must be a number (seconds), got a string ("abc")
featurize: m.jsonl:3: "duration" must be 0 or more seconds, got -1
featurize: m.jsonl:4: "offset" must be 0 or more seconds, got -2
featurize: m.jsonl:5: invalid JSON: invalid token near 'NaN' (column 56)$nan
featurize: m.jsonl:6: invalid JSON: invalid token near '-' (column 56)$nan
featurize: m.jsonl:7: invalid JSON: real number overflow near '1e999' (column 60)
featurize: m.jsonl:8: "duration" must be a number (seconds), got an array
featurize: m.jsonl:9: "offset" must be a number (seconds), got a boolean
featurize: m.jsonl:10: "offset" must be a number (seconds), got an empty string
featurize: done: 2 of 12 (2 new, 0 already stored, 10 failed)
EOF
# the failed lines are recorded under their ids; the good ones stored
"$B/cache-verify" -q s >/dev/null 2>&1 || fail "cache-verify: $("$B/cache-verify" s 2>&1 | tail -3)"
# --strict: the first such line stops the run
FZ -j 1 --strict -o s2 --manifest m.jsonl >out 2>err
rc=$?
[ $rc = 1 ] || fail "--strict: exit $rc, want 1: $(cat err)"
grep -qx 'featurize: m.jsonl:1: "offset" must be a number (seconds), got a string ("2.5s")' err &&
  grep -q 'stopped at the first failure (--strict)' err || fail "--strict: $(cat err)"
# a junk string offset on a line of its own is no segment refused before the run: the line fails
printf '{"audio_filepath": "long.wav", "id": "t1", "offset": "1.5 s"}\n' >one.jsonl
FZ -o s3 --manifest one.jsonl >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx 'featurize: one.jsonl:1: "offset" must be a number (seconds), got a string ("1.5 s")' err ||
  fail "one junk string offset: exit $rc: $(cat err)"
# every field a string, as pandas' to_json of a CSV read as strings writes it: stored whole
cat >csv.json <<'EOF'
{"audio_filepath": "long.wav", "duration": "4.0", "offset": "0", "text": "a"}
{"audio_filepath": "a.wav", "duration": " 0.5 ", "offset": "0.0", "text": "b"}
{"audio_filepath": "a.wav", "id": "c", "duration": "5E-1", "text": "c"}
EOF
FZ -o s4 --manifest csv.json >out 2>err
rc=$?
[ $rc = 0 ] && grep -qx 'featurize: done: 3 of 3 (3 new, 0 already stored, 0 failed)' err ||
  fail "numeric strings: exit $rc: $(cat err)"
# ... and a string duration is held to what a number is: shorter than the file, a segment
printf '{"audio_filepath": "long.wav", "id": "d1", "duration": "2.0"}\n' >short.jsonl
FZ -o s5 --manifest short.jsonl >out 2>err
rc=$?
[ $rc = 1 ] && grep -q '"duration": 2 (line 1) of a 4.00 s file: a segment of its audio file' err ||
  fail "short string duration: exit $rc: $(cat err)"
# a string offset over 0 is a segment: refused before the store is touched, as a number is
printf '{"audio_filepath": "long.wav", "id": "t2", "offset": "1.5"}\n' >seg.jsonl
FZ -o s6 --manifest seg.jsonl >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e s6 ] &&
  grep -qx 'featurize: seg.jsonl:1: "offset": 1.5: a segment of its audio file .*' err ||
  fail "string offset: exit $rc: $(cat err)"
# ... with blanks in its quotes, as the line's reader takes it (it failed the line, exit 1)
printf '{"audio_filepath": "long.wav", "id": "t3", "offset": " 1.5 "}\n' >seg2.jsonl
FZ -o s7 --manifest seg2.jsonl >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -e s7 ] &&
  grep -qx 'featurize: seg2.jsonl:1: "offset": 1.5: a segment of its audio file .*' err ||
  fail "string offset with blanks: exit $rc: $(cat err)"

[ $fails = 0 ] && echo ok
exit $((fails > 0))
