# For the CLI test scripts (source it): fail MESSAGE ends the test; expect STATUS PATTERN --
# ARGS runs $sim ARGS and requires that exit status and a line of stderr matching PATTERN
# (extended regex), keeping stdout and stderr in out.txt and err.txt.
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
expect() {
  local status=$1 pattern=$2
  shift 3
  set +e
  "$sim" "$@" >out.txt 2>err.txt
  local got=$?
  set -e
  [[ $got == "$status" ]] || fail "'$*' exited $got, not $status: $(cat err.txt)"
  grep -qE -- "$pattern" err.txt || fail "'$*' said '$(cat err.txt)', not /$pattern/"
}
