-- read.lua - GET /v1/submissions/{id} round-robin over the ids in a file
-- (one per line). Usage: wrk ... -s read.lua URL -- IDS_FILE
-- With KEVALD_GAP_MS set in the environment, each connection waits on
-- average that many milliseconds before each request, uniformly jittered
-- over [0.5, 1.5) x gap so the connections do not move in lock-step (a paced
-- load for latency at a given rate: rate ~= connections * 1000 / (gap + latency)).
package.path = debug.getinfo(1, "S").source:match("^@(.*/)") .. "?.lua;" .. package.path
require "common"

local reqs = {}
local n, i = 0, 0

function init(args)
   for line in io.lines(args[1]) do
      n = n + 1
      reqs[n] = wrk.format("GET", "/v1/submissions/" .. line)
   end
   math.randomseed(os.time() + n + tonumber(tostring({}):match("0x(%x+)"), 16) % 100000)
   i = math.random(n)
end

function request()
   i = i % n + 1
   return reqs[i]
end

local gap = tonumber(os.getenv("KEVALD_GAP_MS") or "")
if gap then
   function delay()
      return math.floor(gap * (0.5 + math.random()))
   end
end

done = report
