-- submit.lua - POST one body (a file: a single submission or a batch) over
-- and over. Usage: wrk ... -s submit.lua URL -- BODY_FILE
package.path = debug.getinfo(1, "S").source:match("^@(.*/)") .. "?.lua;" .. package.path
require "common"

function init(args)
   local f = assert(io.open(args[1], "rb"))
   wrk.method = "POST"
   wrk.path = "/v1/submissions"
   wrk.body = f:read("*a")
   wrk.headers["Content-Type"] = "application/json"
   f:close()
end

done = report
