-- common.lua - shared by the wrk scripts: print one JSON line of results at
-- the end (wrk's own text stays above it), so run.sh parses numbers, not prose.
function report(summary, latency, requests)
   local e = summary.errors
   local errs = e.connect + e.read + e.write + e.timeout
   io.write(string.format(
      'RESULT {"requests": %d, "duration_s": %.3f, "rps": %.1f, "non2xx": %d, "socket_errors": %d, ' ..
      '"p50_ms": %.3f, "p90_ms": %.3f, "p99_ms": %.3f, "max_ms": %.3f}\n',
      summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
      e.status, errs, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
      latency:percentile(99) / 1000, latency.max / 1000))
end
