# Helper of the CLI tests (sourced; not a test). Root reads and writes whatever a file's modes
# say: "${as_owner[@]}" CMD ... runs CMD without the capabilities that let it (CAP_DAC_OVERRIDE,
# CAP_DAC_READ_SEARCH, dropped from the bounding set by setpriv before the exec), keeping its uid,
# so the modes bind it as they bind any owner: a store made read-only with chmod a-w is one this
# user may only read. Anyone else runs CMD as is. Needs nothing to reach the checkout from another
# user, so it works wherever the checkout lies (under /root too).
as_owner=()
cap_eff=$(awk '$1 == "CapEff:" { print $2 }' /proc/self/status)
if (( 0x${cap_eff:-0} & 0x6 )); then
  command -v setpriv >/dev/null ||
    { echo "FAIL: setpriv missing (util-linux; scripts/setup installs it)"; exit 1; }
  as_owner=(setpriv --bounding-set=-dac_override,-dac_read_search --)
fi
