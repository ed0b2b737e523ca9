-- wrk_put.lua -- keep-alive REST PUTs of a small object for wrk, each to a fresh key (so none is a no-op write).
--
--   CANOPY_CREDENTIAL=$(cat DATA/admin.credential) wrk -t2 -c16 -d10s -s Tests/bench/wrk_put.lua https://127.0.0.1:PORT
--
-- The credential goes in `Authorization: Bearer` (README: REST credentials). wrk does not verify the server's
-- certificate, so a throw-away one works over https. Figures, not assertions: not run by Tests/run.sh.
--
-- Keys carry the run's start (seconds and the process's CPU clock) as well as the thread and a counter: with the
-- counter alone, a second run against the same namespace rewrote the first run's keys with the same object, and
-- a write that changes nothing is acknowledged without a commit or an fsync (8,700 instead of 2,600 PUTs/s at one
-- connection).
local credential = os.getenv("CANOPY_CREDENTIAL") or error("set CANOPY_CREDENTIAL to the admin credential")
local namespace = os.getenv("CANOPY_NS") or "wrkput"
local threads = 0
local run = string.format("%d%06d", os.time(), math.floor(os.clock() * 1e6) % 1000000)

function setup(thread)
  thread:set("id", run .. "-" .. threads)
  threads = threads + 1
end

function init(args)
  counter = 0
  wrk.method = "PUT"
  wrk.body = '{"title":"hello","order":3,"seen":false}'
  wrk.headers["Authorization"] = "Bearer " .. credential
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  return wrk.format(nil, "/items/w" .. id .. "-" .. counter .. ".json?ns=" .. namespace .. "&print=silent")
end

function response(status, headers, body)
  if status >= 300 then
    print("unexpected status " .. status .. ": " .. body)
    wrk.thread:stop()
  end
end
