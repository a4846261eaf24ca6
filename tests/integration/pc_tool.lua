--[[
Small helpers for the shell integration tests, with only lua5.1 + lua-socket + lua-cjson (no curl,
no python).
  lua5.1 pc_tool.lua http SOCKET METHOD PATH [BODY]  -> prints the status code, a newline, the body;
                                                        exit 1 when nothing answers
  lua5.1 pc_tool.lua jget KEY.PATH < json            -> prints the value at a dotted path (numbers as
                                                        integers when whole, objects as compact JSON);
                                                        exit 1 when the input is not JSON or the path
                                                        is absent or null
--]]
local here = arg[0]:match("^(.*)/[^/]*$") or "."
PEAKCAST_TEST = {}
slurm = { SUCCESS = 0, log_info = function() end, log_user = function() end }
dofile(here .. "/../../contrib/slurm/job_submit.lua")
local json = PEAKCAST_TEST.json

local cmd = arg[1]
if cmd == "http" then
  local unix = require("socket.unix")
  local c = unix()
  c:settimeout(5)
  if not c:connect(arg[2]) then os.exit(1) end
  local body = arg[5] or ""
  c:send(string.format("%s %s HTTP/1.1\r\nHost: peakcastd\r\nContent-Type: application/json\r\n" ..
                       "Content-Length: %d\r\nConnection: close\r\n\r\n%s", arg[3], arg[4], #body, body))
  local data, err, partial = c:receive("*a")
  data = data or partial or ""
  c:close()
  local status = data:match("^HTTP/1%.%d (%d%d%d)")
  if not status then os.exit(1) end
  local s = data:find("\r\n\r\n", 1, true)
  io.write(status, "\n", s and data:sub(s + 4) or "", "\n")
elseif cmd == "jget" then
  local text = io.read("*a")
  local ok, v = pcall(json.decode, text)
  if not ok then os.exit(1) end
  for key in (arg[2] or ""):gmatch("[^.]+") do
    if type(v) ~= "table" then os.exit(1) end
    v = v[tonumber(key) or key]
  end
  if v == nil or v == json.null then os.exit(1) end
  if type(v) == "table" then print(json.encode(v)) else print(type(v) == "number" and json.number(v) or tostring(v)) end
else
  io.stderr:write("usage: pc_tool.lua http SOCKET METHOD PATH [BODY] | jget KEY.PATH\n")
  os.exit(2)
end
