# Sourced by the scripts that download. retry_network runs a command up to three times, again
# only when its output shows that the network failed, not the command: a registry connection
# reset mid-download (npm's own retries cover requests, not a body cut off) failed a CI run of
# `npm install` on 2026-12-05. Other failures are reported at once, as they are.
retry_network() {
  local out attempt status
  out=$(mktemp)
  for attempt in 1 2 3; do
    "$@" 2>&1 | tee "$out"
    status=${PIPESTATUS[0]}
    if [ "$status" -eq 0 ] || ! grep -qaE \
      'npm error (network|code (ECONNRESET|ETIMEDOUT|EAI_AGAIN|ECONNREFUSED|ENOTFOUND|EPIPE|ERR_SOCKET_TIMEOUT))' "$out"; then
      break
    fi
    [ "$attempt" -lt 3 ] && echo "network error (attempt $attempt of 3); trying again in $((attempt * 20)) s" && sleep $((attempt * 20))
  done
  rm -f "$out"
  return "$status"
}
