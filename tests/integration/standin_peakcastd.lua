--[[
Stand-in for peakcastd, ONLY for developing and testing the Slurm side (job_submit.lua) before the
real daemon exists. Speaks just enough HTTP/1.1 on a UNIX socket:
  POST /v1/predict  -> {"job_id":..,"predictions":{"mem":{..},"vram":..}} built from the request
  POST /v1/complete -> {"ok":true}
  GET  /healthz     -> {"status":"ok"}
Usage: lua5.1 standin_peakcastd.lua SOCKET REQUEST_LOG MODE_FILE
Each request body is appended to REQUEST_LOG as one compact JSON line. MODE_FILE is read at each
request: "ok" (default), "slow" (answers after 1 s), "garbage" (200 with a non-JSON body), "500",
"keepalive" (answers at once but closes the connection 1 s later), "drip" (a valid answer whose
first 60 bytes come one every 20 ms: each read sees progress, the whole takes 1.2 s), "noclen" (a
valid answer without Content-Length, ended by closing), "noclen_huge" (2 MiB without
Content-Length), and answers whose recommendation the hook must not use: "rec_tiny" (1 byte),
"rec_frac" (not whole bytes), "rec_inf" (1e999), "rec_below_peak" (below the answer's bytes),
"rec_below_upper" (from the bound, below upper_util x the request); "rec_small" is a sane answer
of 5 % of the request; "rec_limit" one capped at a partition limit of 60 % of the request, below
the bound. "num_nan", "num_inf" and "num_hex" answer recommended_bytes as NaN, Infinity or 0x1F,
which JSON does not have: the hook must refuse the whole answer.
--]]
local unix = require("socket.unix")
local socket = require("socket")

local sock_path, req_log, mode_file = arg[1], arg[2], arg[3]
assert(sock_path and req_log and mode_file, "usage: standin_peakcastd.lua SOCKET REQUEST_LOG MODE_FILE")

-- Reuse the hook's JSON code.
PEAKCAST_TEST = {}
slurm = { SUCCESS = 0, log_info = function() end, log_user = function() end }
local here = arg[0]:match("^(.*)/[^/]*$") or "."
dofile(here .. "/../../contrib/slurm/job_submit.lua")
local json = PEAKCAST_TEST.json

local function read_mode()
  local f = io.open(mode_file, "r")
  if not f then return "ok" end
  local m = (f:read("*l") or "ok"):gsub("%s", "")
  f:close()
  return m
end

local drip = false

local no_content_length = false

local function reply(c, status, body)
  local reason = ({ [200] = "OK", [400] = "Bad Request", [404] = "Not Found", [500] = "Internal Server Error" })[status]
  local text = string.format("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
                             status, reason or "X", #body, body)
  if no_content_length then
    text = string.format("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n%s",
                         status, reason or "X", body)
  end
  if drip then
    for i = 1, 60 do
      if not c:send(text:sub(i, i)) then return end
      socket.sleep(0.02)
    end
    text = text:sub(61)
  end
  c:send(text)
end

local answers_given = 0
-- recommended_bytes written as this text, past the encoder
local raw_number = { rec_inf = "1e999", num_nan = "NaN", num_inf = "Infinity", num_hex = "0x1F" }
local function predict_answer(req, mode)
  local mem = req.req_mem_bytes
  local p = { util = 0.5, route = "no_history", expert = "", history_n = 0, history_level = "none",
              upper_util = 0.75, upper_coverage = 0.9, rationale = "stand-in: half of the request" }
  if type(mem) == "number" then
    p.bytes = math.floor(mem / 2)
    -- "raise": a rule that allows more than the request (allow_above_request)
    p.recommended_bytes = math.floor(mem * (mode == "raise" and 1.5 or 0.75))
    p.recommendation_rule = "default: upper+margin"
    -- "raise" also stands for an answer from the bound, which names no basis
    p.recommendation_source = mode == "raise" and "bound" or "workload"
    p.recommendation_basis = mode ~= "raise" and "the largest peak + 3 % (over its last 12 runs)" or json.null
    if mode == "rec_tiny" then p.recommended_bytes = 1
    elseif mode == "rec_frac" then p.recommended_bytes = p.recommended_bytes + 0.5
    elseif raw_number[mode] then p.recommended_bytes = "__RAW__"
    elseif mode == "rec_below_peak" then p.recommended_bytes = math.floor(mem * 0.4)
    elseif mode == "rec_below_upper" then
      p.recommended_bytes = math.floor(mem * 0.7)  -- above the peak (0.5), below the bound (0.75)
      p.recommendation_source = "bound"
      p.recommendation_basis = json.null
    elseif mode == "rec_limit" then
      -- capped at a partition limit of 60 % of the request, below the bound (0.75)
      p.recommended_bytes = math.floor(mem * 0.6)
      p.recommendation_rule = "default: capped at partition limit"
      p.recommendation_source = "bound"
      p.recommendation_basis = json.null
    elseif mode == "rec_small" then
      p.bytes, p.upper_util, p.recommended_bytes = math.floor(mem * 0.04), 0.045, math.floor(mem * 0.05)
    end
  end
  local vram = json.null
  if type(req.req_gpus) == "number" and req.req_gpus > 0 then
    vram = { util = 0.25, route = "no_history" }
  end
  -- "long": an answer over the hook's MAX_COMMENT_BYTES (the hook writes its summary)
  if mode == "long" then p.rationale = string.rep("why ", 1500) end
  answers_given = answers_given + 1
  local text = json.encode({ answer_id = string.format("standin%08d", answers_given), job_id = req.job_id,
                             predictions = { mem = p, vram = vram } })
  return (text:gsub('"__RAW__"', raw_number[mode] or "%0"))
end

os.remove(sock_path)
local srv = assert(unix())
assert(srv:bind(sock_path))
assert(srv:listen(16))
io.stderr:write("standin_peakcastd: listening on " .. sock_path .. "\n")

while true do
  local c = srv:accept()
  if c then
    c:settimeout(2)
    local line = c:receive("*l")
    local headers, clen = {}, 0
    while line do
      local h = c:receive("*l")
      if not h or h == "" then break end
      local k, v = h:match("^([^:]+):%s*(.*)$")
      if k then headers[k:lower()] = v end
    end
    clen = tonumber(headers["content-length"] or "0") or 0
    local body = clen > 0 and c:receive(clen) or ""
    local method, path = (line or ""):match("^(%u+) (%S+) HTTP/1%.%d$")
    local mode = read_mode()
    if mode == "slow" then socket.sleep(1.0) end
    drip = mode == "drip"
    no_content_length = mode == "noclen" or mode == "noclen_huge"
    if not method then
      reply(c, 400, '{"error":"bad request line"}')
    elseif method == "GET" and path == "/healthz" then
      reply(c, 200, '{"status":"ok"}')
    elseif method == "POST" and (path == "/v1/predict" or path == "/v1/complete") then
      local f = io.open(req_log, "a"); f:write(path, " ", body, "\n"); f:close()
      local ok, req = pcall(json.decode, body or "")
      if not ok or type(req) ~= "table" then
        reply(c, 400, '{"error":"body is not a JSON object"}')
      elseif mode == "500" then
        reply(c, 500, '{"error":"stand-in told to fail"}')
      elseif mode == "garbage" then
        reply(c, 200, "this is not json {")
      elseif path == "/v1/complete" then
        reply(c, 200, '{"ok":true}')
      elseif mode == "noclen_huge" then
        reply(c, 200, '{"pad":"' .. string.rep("x", 2 * 1048576) .. '"}')
      else
        reply(c, 200, predict_answer(req, mode))
      end
    else
      reply(c, 404, '{"error":"no such route"}')
    end
    if mode == "keepalive" then socket.sleep(1.0) end  -- holds the connection open after answering
    c:close()
  end
end
