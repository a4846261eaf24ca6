--[[
peakcast job_submit hook for Slurm 22.05 (job_submit/lua, Lua 5.1). Copy it next to slurm.conf as
job_submit.lua, set JobSubmitPlugins=lua (slurm.conf.example in this folder) and SOCKET_PATH below.
It needs lua-socket and lua-cjson (Debian: apt install lua-socket lua-cjson).

At each submission it sends the job request (the canonical record without outcome fields) to
peakcastd's POST /v1/predict over a UNIX socket and writes the answer, compact, into the job's
comment, whose answer_id slurm-sync reads back. It fails open: daemon down, slow (TOTAL_TIMEOUT_S
for the whole exchange) or answering garbage, the job is accepted unchanged and one line goes to
slurmctld.log. It changes a request only with LOWER_MEM_TO_RECOMMENDATION. What it sends for each
kind of request, and why: README.md in this folder; lowering: docs/bounds.md ("The Slurm hook may
lower --mem").
--]]

---------------------------------------------------------------------------------------------------
-- Configuration
---------------------------------------------------------------------------------------------------
local SOCKET_PATH = "/run/peakcast/peakcastd.sock"
local TOTAL_TIMEOUT_S = 0.2          -- connect + send + receive, all together
local COMMENT_FIELD = "comment"      -- "comment" or "admin_comment" (jobstats users keep the latter)
local OVERWRITE_USER_COMMENT = false -- false: a comment the user set is kept and no answer is written
local MAX_COMMENT_BYTES = 4096       -- a longer answer is written as a summary (see summarize())
-- COMMENT_SUMMARY: false (default) writes the whole answer (450-700 bytes); true its summary only
-- (200-270 bytes: the answer_id slurm-sync reads back, and per resource the figures; README.md).
local COMMENT_SUMMARY = false
local MAX_SCRIPT_BYTES = 1048576     -- a longer script is not sent (the rest of the request is)
local PENDING_JOB_ID = "pending"     -- job_id sent before Slurm has assigned one
local PREDICT_WITHOUT_SCRIPT = false -- salloc/srun allocations have no script: skip them by default
local TELL_USER = true               -- slurm.log_user shows the recommendation on sbatch's stderr
-- LOWER_MEM_TO_RECOMMENDATION: false (default) only advises (the comment, the user told). true:
-- lowers --mem / --mem-per-cpu to the daemon's recommended_bytes when that is below the request:
-- never raised, never below LOWER_MEM_MIN_MB, never above the partition's limit.
local LOWER_MEM_TO_RECOMMENDATION = false
local LOWER_MEM_MIN_MB = 256
-- Never lowered below this fraction of the job's own request, a guard against a daemon that is
-- wrong (a unit slip, a bug): 0.1 lets a job give back 90 % of it in one step; 0: no guard.
local LOWER_MEM_MIN_FRACTION = 0.1
-- Where it lowers, for a staged roll-out: nil = every job; else a set of names, e.g. { cpu = true },
-- listing every partition the job may run in and its account (else its user's default one).
local LOWER_MEM_PARTITIONS = nil
local LOWER_MEM_ACCOUNTS = nil
-- SLURM_CONF_DEF_MEM_PER_CPU / _NODE: slurm.conf's global DefMemPerCPU or DefMemPerNode in MB (nil =
-- not set there; `scontrol show config | grep DefMemPer`), which job_submit/lua does not show: a
-- job that asks for no memory in a partition that sets neither is otherwise sent with none.
local SLURM_CONF_DEF_MEM_PER_CPU = nil
local SLURM_CONF_DEF_MEM_PER_NODE = nil
-- SLURM_CONF_DEF_MEM_PER_GPU: slurm.conf's global DefMemPerGPU in MB (nil = not set there), which
-- a GPU job that asks for no memory gets x its GPUs unless its partition sets its own:
-- SLURM_CONF_PART_DEF_MEM_PER_GPU, by partition name in MB, e.g. { gpu = 16000 } (nil = none).
-- No Lua field shows either; README.md in this folder says where to read them.
local SLURM_CONF_DEF_MEM_PER_GPU = nil
local SLURM_CONF_PART_DEF_MEM_PER_GPU = nil
-- SLURM_CONF_WHOLE_CORE_THREADS: true where select/cons_tres allocates whole cores (CR_Core*,
-- CR_Socket*) on nodes with ThreadsPerCore > 1: per-CPU memory is then charged on threads the hook
-- cannot count, so such jobs are sent with no memory request and never lowered (memory_known).
local SLURM_CONF_WHOLE_CORE_THREADS = false
local BREAKER_FAILURES = 3           -- failures in a row (no answer, or HTTP 5xx) that open the breaker
local BREAKER_BACKOFF_S = 30         -- the daemon is then skipped this long
local MAX_ANSWER_BYTES = 1048576     -- a longer answer is refused (with or without Content-Length)

local MIB = 1048576
local NO_VAL, NO_VAL16, INFINITE = 4294967294, 65534, 4294967295  -- slurm.NO_VAL, .NO_VAL16, .INFINITE

local unix_ok, unix = pcall(require, "socket.unix")
local socket_ok, socket = pcall(require, "socket")
local cjson_ok, cjson = pcall(require, "cjson")

local function log_info(msg)
  if slurm and slurm.log_info then slurm.log_info("%s", "peakcast: " .. msg) end
end

local missing = {}
if not unix_ok or not socket_ok then missing[#missing + 1] = "lua-socket (socket.unix)" end
if not cjson_ok then missing[#missing + 1] = "lua-cjson" end
local deps_ok = #missing == 0
if not deps_ok then
  log_info(table.concat(missing, " and ") .. (#missing > 1 and " are" or " is") .. " not installed: no " ..
           "predictions, jobs are accepted unchanged (Debian/Ubuntu: apt install lua-socket lua-cjson; " ..
           "then restart slurmctld)")
end

---------------------------------------------------------------------------------------------------
-- JSON: lua-cjson, a private instance that refuses NaN, Infinity and hex numbers in an answer
---------------------------------------------------------------------------------------------------
local codec = cjson_ok and cjson.new()
if codec then
  codec.decode_invalid_numbers(false)
  codec.decode_max_depth(32)
  codec.encode_max_depth(32)
end
local json = { null = cjson_ok and cjson.null or {} }

-- The well-formed UTF-8 sequences of 2-4 bytes (Unicode table 3-7: no overlong form, no surrogate).
local UTF8_SEQUENCES = { "^[\194-\223][\128-\191]", "^\224[\160-\191][\128-\191]",
  "^[\225-\236\238\239][\128-\191][\128-\191]", "^\237[\128-\159][\128-\191]",
  "^\240[\144-\191][\128-\191][\128-\191]", "^[\241-\243][\128-\191][\128-\191][\128-\191]",
  "^\244[\128-\143][\128-\191][\128-\191]" }

-- Replaces each byte that is not part of a valid UTF-8 sequence with U+FFFD: the daemon refuses
-- invalid UTF-8, and lua-cjson passes bytes through unchecked.
local function utf8_clean(s)
  local out, i = {}, 1
  while true do
    local j = s:find("[\128-\255]", i)
    if not j then
      if i == 1 then return s end
      out[#out + 1] = s:sub(i)
      return table.concat(out)
    end
    local seq
    for _, pattern in ipairs(UTF8_SEQUENCES) do
      seq = s:match(pattern, j)
      if seq then break end
    end
    out[#out + 1] = s:sub(i, j - 1) .. (seq or "\239\191\189")
    i = j + (seq and #seq or 1)
  end
end

-- A number as JSON text: whole ones below 2^53 as integers (lua-cjson 2.1.0 prints at most 14
-- digits: 9.007199254741e+15), others in the fewest digits that read back the same; NaN and the
-- infinities, which JSON cannot say, as null.
function json.number(x)
  if x ~= x or x == math.huge or x == -math.huge then return "null" end
  if x == math.floor(x) and math.abs(x) < 2 ^ 53 then return string.format("%d", x) end
  for digits = 15, 16 do
    local t = string.format("%." .. digits .. "g", x)
    if tonumber(t) == x then return t end
  end
  return string.format("%.17g", x)
end

-- A copy of v for lua-cjson: strings (keys too) made valid UTF-8, and each number as the string
-- "\255" .. json.number(x) .. "\255", which json.encode unquotes: no cleaned string holds byte 255.
local function for_cjson(v)
  if type(v) == "string" then return utf8_clean(v) end
  if type(v) == "number" then return "\255" .. json.number(v) .. "\255" end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[type(k) == "string" and utf8_clean(k) or k] = for_cjson(x) end
  return out
end

-- Compact JSON; a table with keys 1..n is an array, any other an object (keys in no set order).
function json.encode(v)
  return (codec.encode(for_cjson(v)):gsub('"\255([^"]*)\255"', "%1"))
end

-- The value; raises on malformed text (lua-cjson's message says at which character).
function json.decode(s) return codec.decode(s) end

---------------------------------------------------------------------------------------------------
-- Reading the request
---------------------------------------------------------------------------------------------------
local function valid(n, unset)
  return type(n) == "number" and n ~= (unset or NO_VAL) and n ~= INFINITE and n ~= NO_VAL and n >= 0
end
local function nonempty(s) if type(s) == "string" and s ~= "" then return s end end

-- The counts of the GPU items in a TRES string such as "gres:gpu:1", "gres:gpu:a100:2", "gpu:2",
-- "gres/gpu=2", "gres:gpu:2,gres:foo:1", in order (false for an item that states none).
local function gpu_counts(tres)
  local counts = {}
  for item in (type(tres) == "string" and tres or ""):gmatch("[^,]+") do
    local name, rest = item:gsub("^%s+", ""):gsub("^gres[:/]", ""):match("^([%w_%-]+)(.*)$")
    if name == "gpu" then counts[#counts + 1] = tonumber(rest:match("[:=](%d+)$")) or false end
  end
  return counts
end

-- Total GPUs in a TRES string (an item without a count is one); nil when it names no GPU.
local function gpus_in(tres)
  local total
  for _, n in ipairs(gpu_counts(tres)) do total = (total or 0) + (n or 1) end
  return total
end

-- MB per GPU in a mem_per_tres string (--mem-per-gpu=4G is "gres:gpu:4096"); nil for no GPU. No
-- count is 1, as slurmctld reads it (gres.c: "Count is 1 by default"); sbatch always writes one.
local function mb_per_gpu(tres) local n = gpu_counts(tres)[1]; if n ~= nil then return n or 1 end end

local function nodes_of(d)
  if valid(d.min_nodes) and d.min_nodes >= 1 then return d.min_nodes end
  return 1
end

local function cpus_of(d)
  local tasks = valid(d.num_tasks) and d.num_tasks >= 1 and d.num_tasks or 1
  local cpt = valid(d.cpus_per_task, NO_VAL16) and d.cpus_per_task >= 1 and d.cpus_per_task or 1
  local cpus = tasks * cpt
  if valid(d.min_cpus) and d.min_cpus > cpus then cpus = d.min_cpus end
  return cpus
end

-- The job's GPUs as sacct's ReqTRES counts them: --gpus, --gres/--gpus-per-node (x nodes),
-- --gpus-per-task (x -n, else x 1), --gpus-per-socket (x --sockets-per-node x nodes; nil without
-- them). stated: only a count the allocation will have, the one memory per GPU is charged on: not
-- --gpus-per-task without -n, nor --gpus-per-socket (N on each socket the job's cores are on,
-- raised to -B where gres.conf binds GPUs to sockets: 22.05's _set_sock_bits) but for -B 1 and one
-- CPU a node, on one core (README.md).
local function gpus_of(d, stated)
  local per_job = gpus_in(d.tres_per_job)
  if per_job then return per_job end
  local per_node = gpus_in(d.tres_per_node) or gpus_in(d.gres)
  if per_node then return per_node * nodes_of(d) end
  local per_task = gpus_in(d.tres_per_task)
  if per_task then
    if valid(d.num_tasks) and d.num_tasks >= 1 then return per_task * d.num_tasks end
    return not stated and per_task or nil
  end
  local per_socket, spn = gpus_in(d.tres_per_socket), d.sockets_per_node
  if not per_socket or not valid(spn, NO_VAL16) or spn < 1 then return nil end
  local one_core = spn == 1 and cpus_of(d) <= nodes_of(d) and not nonempty(d.cpus_per_tres) and
                   not (valid(d.ntasks_per_node, NO_VAL16) and d.ntasks_per_node > 1)
  return (not stated or one_core) and per_socket * spn * nodes_of(d) or nil
end

-- Whole-job host memory in bytes, and which form was requested ("node", "cpu" or "gpu"), or nil.
-- --mem-per-gpu (mem_per_tres: job_desc has no mem_per_gpu field) counts MB x the job's GPUs, as
-- sacct's ReqMem does, where the request states the count.
local function mem_of(d, cpus)
  if valid(d.min_mem_per_node) and d.min_mem_per_node > 0 then
    return d.min_mem_per_node * MIB * nodes_of(d), "node"
  end
  if valid(d.min_mem_per_cpu) and d.min_mem_per_cpu > 0 then
    return d.min_mem_per_cpu * MIB * cpus, "cpu"
  end
  local per_gpu, gpus = mb_per_gpu(d.mem_per_tres), gpus_of(d, true)
  if per_gpu and per_gpu > 0 and gpus and gpus > 0 then
    return per_gpu * MIB * gpus, "gpu"
  end
  return nil
end

-- p[key] of a part_list record, or nil: slurmctld's records may raise on a field they lack.
local function part_field(p, key)
  local ok, v = pcall(function() return p[key] end)
  if ok then return v end
end

-- The names of the partitions the job may run in: those it names ("a,b": blanks and repeats
-- dropped), else the default one (part_list's flag_default record). Empty when neither is known.
local function partition_names(d, part_list)
  local names, seen = {}, {}
  local want = nonempty(d.partition)
  if want then
    for name in want:gmatch("[^,%s]+") do
      if not seen[name] then seen[name] = true; names[#names + 1] = name end
    end
    return names
  end
  if type(part_list) ~= "table" then return names end
  for key, p in pairs(part_list) do
    if part_field(p, "flag_default") == 1 then
      local name = nonempty(part_field(p, "name")) or nonempty(key)
      if name and not seen[name] then seen[name] = true; names[#names + 1] = name end
    end
  end
  return names
end

-- The part_list record named NAME: slurmctld keys the table by partition name.
local function find_partition(part_list, name)
  local p = part_field(part_list, name)
  if p ~= nil then return p end
  for _, q in pairs(part_list) do
    if part_field(q, "name") == name then return q end
  end
  return nil
end

-- The part_list records of the partitions the job may run in (none for a name it does not hold).
local function job_partitions(d, part_list)
  local out = {}
  if type(part_list) ~= "table" then return out end
  for _, name in ipairs(partition_names(d, part_list)) do out[#out + 1] = find_partition(part_list, name) end
  return out
end

-- value_of(p) for each of the job's partitions when every one of them is in part_list and they
-- all give the same non-nil value; otherwise nil (unknown).
local function agreed_by_partitions(d, part_list, value_of)
  local names = partition_names(d, part_list)
  local parts = job_partitions(d, part_list)
  if #names == 0 or #parts ~= #names then return nil end
  local agreed
  for _, p in ipairs(parts) do
    local v = value_of(p)
    if v == nil or (agreed ~= nil and v ~= agreed) then return nil end
    agreed = v
  end
  return agreed
end

-- The job's time limit in minutes, or nil. Without -t slurmctld gives the job its partition's
-- DefaultTime, else its MaxTime (INFINITE: none). Several partitions: only a limit they all give.
local function time_limit_min(d, part_list)
  if valid(d.time_limit) then return d.time_limit end
  return agreed_by_partitions(d, part_list, function(p)
    local def, max = part_field(p, "default_time"), part_field(p, "max_time")
    return (valid(def) and def) or (valid(max) and max) or nil
  end)
end

-- Partitions already named in the log line below (once each while slurmctld keeps this script).
local told_no_gpu_default = {}
local function unseen_gpu_default(names)
  for _, name in ipairs(#names > 0 and names or { "(default)" }) do
    if not told_no_gpu_default[name] then
      told_no_gpu_default[name] = true
      log_info("partition " .. name .. ": a GPU job without a memory request is sent its " ..
               "DefMemPerCPU/DefMemPerNode default (if any); job_submit/lua shows no " ..
               "DefMemPerGPU, so one set on this partition is not seen unless copied into " ..
               "SLURM_CONF_PART_DEF_MEM_PER_GPU")
    end
  end
end

-- The whole-job bytes slurmctld gives a job that asks for no memory: its partition's DefMemPerCPU x
-- CPUs or DefMemPerNode x nodes, else the site's SLURM_CONF_DEF_MEM_PER_CPU/_NODE; for a GPU job
-- DefMemPerGPU x its GPUs where one is known (the partition's own, else the global one), else those
-- (logged once per partition). nil when unknown: none set, partitions that differ, or a GPU count
-- the request does not state. Not the user's own request: never lowered (no form).
local function default_mem_of(d, part_list, cpus)
  local function mb(v)  -- MB, or nil: unset, not a number, 0, or past 2^62 (INFINITE)
    return type(v) == "number" and valid(v) and v > 0 and v < 2 ^ 62 and v or nil
  end
  if (gpus_of(d) or gpus_in(d.tres_per_socket) or 0) > 0 then  -- a GPU job, count known or not
    -- None set anywhere falls through to DefMemPerCPU/DefMemPerNode.
    local names, per_gpu = partition_names(d, part_list), nil
    local own = SLURM_CONF_PART_DEF_MEM_PER_GPU
    if type(own) ~= "table" then own = {} end
    if #names == 0 then per_gpu = mb(SLURM_CONF_DEF_MEM_PER_GPU) end
    for i, name in ipairs(names) do
      local v = mb(own[name]) or mb(SLURM_CONF_DEF_MEM_PER_GPU)
      if i == 1 then per_gpu = v elseif v ~= per_gpu then return nil end
    end
    if per_gpu then
      local gpus = gpus_of(d, true)
      if gpus and gpus > 0 then return per_gpu * MIB * gpus, "gpu" end
      return nil
    end
    unseen_gpu_default(names)
  end
  return agreed_by_partitions(d, part_list, function(p)
    local per_cpu, per_node = mb(part_field(p, "def_mem_per_cpu")), mb(part_field(p, "def_mem_per_node"))
    if not per_cpu and not per_node then
      per_cpu, per_node = mb(SLURM_CONF_DEF_MEM_PER_CPU), mb(SLURM_CONF_DEF_MEM_PER_NODE)
    end
    if per_cpu then return per_cpu * MIB * cpus end
    if per_node then return per_node * MIB * nodes_of(d) end
    return nil
  end)
end

-- Whether the memory the hook would send is what slurmctld will allocate (AllocTRES mem=, which the
-- history learns). Not under --mem=0 (whole nodes), nor per-CPU or per-GPU memory under --exclusive
-- (shared 0; =user is 2) or OverSubscribe=EXCLUSIVE (max_share 0), charged on every CPU and GPU of
-- the nodes (README.md): the daemon would predict too little, so no memory request is sent.
local function memory_known(d, part_list, form)
  if (valid(d.min_mem_per_node) and d.min_mem_per_node == 0) or (valid(d.min_mem_per_cpu) and d.min_mem_per_cpu == 0) then
    return false
  end
  if valid(d.min_mem_per_node) and d.min_mem_per_node > 0 then return true end
  if d.shared == 0 then return false end
  for _, p in ipairs(type(part_list) == "table" and job_partitions(d, part_list) or {}) do
    if part_field(p, "max_share") == 0 then return false end
  end
  -- Per-CPU memory (asked for, or a default that may be DefMemPerCPU) is charged on the CPUs
  -- allocated: more than cpus_of counts under --cpus-per-gpu or on whole cores of threads.
  if form ~= "gpu" and (nonempty(d.cpus_per_tres) or SLURM_CONF_WHOLE_CORE_THREADS) then return false end
  return true
end

-- The canonical record (../shared/data/README.md) without outcome fields. part_list: slurmctld's,
-- for the default partition, time limit and memory of a job that names none.
local function build_record(d, submit_uid, part_list)
  local time_min = time_limit_min(d, part_list)
  local cpus = cpus_of(d)
  -- A --mem-per-gpu whose GPU count is unknown is still the job's own request: no default then.
  local mem, form = mem_of(d, cpus)
  local default_form
  if not mem and not mb_per_gpu(d.mem_per_tres) then mem, default_form = default_mem_of(d, part_list, cpus) end
  if not memory_known(d, part_list, form or default_form or (mb_per_gpu(d.mem_per_tres) and "gpu")) then
    mem, form = nil, nil
  end
  local rec = {
    job_id = (valid(d.job_id) and d.job_id > 0) and tostring(d.job_id) or PENDING_JOB_ID,
    user = nonempty(d.user_name) or tostring(d.user_id or submit_uid),
    submit_time = os.time(),
    req_cpus = cpus,
    req_mem_bytes = mem,
    req_gpus = gpus_of(d),
    req_time_s = time_min and time_min * 60 or nil,
    job_name = nonempty(d.name),
    -- As Slurm resolves them ("gpu,cpu", or the default one): the daemon's rule takes their settings.
    partition = nonempty(table.concat(partition_names(d, part_list), ",")),
    account = nonempty(d.account) or nonempty(d.default_account),
  }
  local script = nonempty(d.script)
  if script and #script <= MAX_SCRIPT_BYTES then rec.script = script end
  return rec, script, form
end

---------------------------------------------------------------------------------------------------
-- HTTP/1.1 over the UNIX socket, with one deadline for the whole exchange
---------------------------------------------------------------------------------------------------
local function now() return socket.gettime() end

local function http_post(path, body)
  if not deps_ok then return nil, table.concat(missing, " and ") .. " not installed" end
  local deadline = now() + TOTAL_TIMEOUT_S
  local c = unix()
  if not c then return nil, "cannot create a UNIX socket" end
  -- Set before every connect/send/receive, in 't' (total) mode: LuaSocket documents the default
  -- 'b' mode as a limit per operating-system wait, which a daemon dribbling bytes would renew;
  -- 't' bounds the whole call, so the deadline holds for every read.
  local function left()
    local l = deadline - now()
    if l <= 0 then return nil end
    c:settimeout(l, "t")
    return l
  end
  local function fail(why) c:close(); return nil, why end

  left()
  local ok, err = c:connect(SOCKET_PATH)
  if not ok then return fail("connect " .. SOCKET_PATH .. ": " .. tostring(err)) end
  local req = "POST " .. path .. " HTTP/1.1\r\nHost: peakcastd\r\nContent-Type: application/json\r\n" ..
              "Content-Length: " .. #body .. "\r\nConnection: close\r\n\r\n" .. body
  local sent = 0
  while sent < #req do
    if not left() then return fail("timeout sending") end
    local n, e, partial = c:send(req, sent + 1)
    if n then sent = n else
      if e ~= "timeout" then return fail("send: " .. tostring(e)) end
      sent = partial or sent
    end
  end

  -- Status line and headers line by line, then exactly Content-Length bytes (or, without one, up to
  -- the close), so a daemon that keeps the connection open costs no extra wait.
  local function recv(pattern)
    local got = {}
    while true do
      if not left() then return nil, "timeout waiting for the answer" end
      local data, e, partial = c:receive(pattern)
      if data then got[#got + 1] = data; return table.concat(got) end
      if partial and #partial > 0 then
        got[#got + 1] = partial
        if type(pattern) == "number" then pattern = pattern - #partial end
      end
      if e ~= "timeout" then return nil, "receive: " .. tostring(e) end
    end
  end
  local line, why = recv("*l")
  if not line then return fail(why) end
  local status = tonumber(line:match("^HTTP/1%.%d (%d%d%d)"))
  if not status then return fail("malformed HTTP status line") end
  local clen, chunked, nheaders = nil, false, 0
  while true do
    local h; h, why = recv("*l")
    if not h then return fail(why) end
    if h == "" then break end
    nheaders = nheaders + 1
    if nheaders > 100 then return fail("too many headers") end
    local k, v = h:match("^([^:]+):%s*(.-)%s*$")
    k = k and k:lower()
    if k == "content-length" then clen = tonumber(v) end
    if k == "transfer-encoding" and v:lower() ~= "identity" then chunked = true end
  end
  if chunked then return fail("chunked answer not supported") end
  local resp_body
  if clen then
    if clen > MAX_ANSWER_BYTES then return fail("answer larger than " .. MAX_ANSWER_BYTES .. " bytes") end
    resp_body = clen == 0 and "" or recv(clen)
  else
    -- No Content-Length: until the daemon closes, but never more than MAX_ANSWER_BYTES ("*a"
    -- would hold whatever it sends in memory, under slurmctld's locks).
    local got, total = {}, 0
    while true do
      if not left() then return fail("timeout waiting for the answer") end
      local data, e, partial = c:receive(65536)
      local chunk = data or partial
      if chunk and #chunk > 0 then
        got[#got + 1] = chunk
        total = total + #chunk
        if total > MAX_ANSWER_BYTES then return fail("answer larger than " .. MAX_ANSWER_BYTES .. " bytes") end
      end
      if e == "closed" then break end
      if not data and e ~= "timeout" then return fail("receive: " .. tostring(e)) end
    end
    resp_body = table.concat(got)
  end
  if not resp_body then return fail("incomplete answer") end
  c:close()
  return status, resp_body
end

---------------------------------------------------------------------------------------------------
-- Using the answer
---------------------------------------------------------------------------------------------------
local function field(t, ...)
  for _, k in ipairs({ ... }) do
    if type(t) ~= "table" then return nil end
    t = t[k]
  end
  if t == json.null then return nil end
  return t
end

local function human(bytes)
  if type(bytes) ~= "number" then return "?" end
  if bytes >= 1024 * MIB then return string.format("%.1fG", bytes / (1024 * MIB)) end
  return string.format("%dM", math.ceil(bytes / MIB))
end

-- A short object when the whole answer does not fit in MAX_COMMENT_BYTES, or COMMENT_SUMMARY is set.
local function summarize(ans)
  local keep = { "util", "bytes", "upper_util", "recommended_bytes", "route" }
  -- answer_id: slurm-sync reads it back, so the daemon learns the job against this very answer.
  local out = { answer_id = field(ans, "answer_id"), job_id = field(ans, "job_id"), predictions = {} }
  for _, r in ipairs({ "mem", "vram" }) do
    local p = field(ans, "predictions", r)
    if type(p) == "table" then
      local s = {}
      for _, k in ipairs(keep) do s[k] = field(p, k) end
      out.predictions[r] = s
    end
  end
  return json.encode(out)
end

-- A partition's memory limit as job_submit/lua gives it (MB), or nil when it sets none: max_mem_per_cpu
-- where Slurm's MEM_PER_CPU bit (2^63) is set, else max_mem_per_node. No limit reads as
-- max_mem_per_node = 0, and MaxMemPerNode=UNLIMITED (INFINITE64, whose top bit is MEM_PER_CPU) as
-- max_mem_per_cpu = 2^63 - 1 (slurmctld 22.05, tests/integration/slurm_hook_test.sh).
local UNLIMITED_MB = 2 ^ 62
local function limit_field(p, key)
  local v = part_field(p, key)
  if type(v) == "number" and v > 0 and v < UNLIMITED_MB then return v end
  return nil
end

-- The partition limit on the job's request in its own form, in MB (nil when none): per node for
-- --mem, per CPU for --mem-per-cpu; a limit of the other form converted with the job's CPUs per
-- node, as Slurm checks it. Several partitions: the smallest. None for --mem-per-gpu: the limits
-- bound pn_min_memory, which it leaves unset.
local function partition_limit_mb(d, part_list, form, cpus)
  if type(part_list) ~= "table" or form == "gpu" then return nil end
  local per_node_cpus = math.max(1, math.ceil(cpus / nodes_of(d)))
  local limit
  for _, p in ipairs(job_partitions(d, part_list)) do
    local node, cpu = limit_field(p, "max_mem_per_node"), limit_field(p, "max_mem_per_cpu")
    local v
    if form == "node" then v = node or (cpu and cpu * per_node_cpus)
    else v = cpu or (node and math.floor(node / per_node_cpus)) end
    if v and v > 0 and (not limit or v < limit) then limit = v end
  end
  return limit
end

-- Whether the job is where the site lowers requests (LOWER_MEM_PARTITIONS, LOWER_MEM_ACCOUNTS).
local function lowering_in_scope(d, part_list)
  if LOWER_MEM_PARTITIONS then
    local names = partition_names(d, part_list)
    if #names == 0 then return false end  -- no partition known: not one that is listed
    for _, n in ipairs(names) do
      if not LOWER_MEM_PARTITIONS[n] then return false end
    end
  end
  if LOWER_MEM_ACCOUNTS then
    local account = nonempty(d.account) or nonempty(d.default_account)
    if not account or not LOWER_MEM_ACCOUNTS[account] then return false end
  end
  return true
end

-- partition_limit_mb x the job's nodes or CPUs, in bytes; nil without one or a request of its own.
local function partition_limit_bytes(d, part_list, form, cpus)
  if form ~= "node" and form ~= "cpu" then return nil end
  local limit = partition_limit_mb(d, part_list, form, cpus)
  return limit and limit * (form == "node" and nodes_of(d) or cpus) * MIB
end

-- The answer's recommended_bytes when the hook may use it; else nil and why (nil, nil when none):
-- whole, finite, positive bytes and, below the request, at least the predicted peak (mem.bytes)
-- and, from the bound, the bound (upper_util x the request), each capped at the partition's limit
-- (limit_bytes, which the hook clamps to itself): the daemon's rule only adds margins to them
-- (docs/bounds.md). A script's own sizing policy ("workload") answers from its runs, not the bound.
local function sane_recommendation(mem, req_mem, limit_bytes)
  local rec = field(mem, "recommended_bytes")
  if rec == nil then return nil, nil end
  if type(rec) ~= "number" then return nil, "recommended_bytes is not a number" end
  if rec ~= rec or rec == math.huge or rec == -math.huge then return nil, "recommended_bytes is not finite" end
  if rec ~= math.floor(rec) then
    return nil, "recommended_bytes " .. json.number(rec) .. " is not a whole number of bytes"
  end
  if rec <= 0 then return nil, "recommended_bytes " .. json.number(rec) .. " is not positive" end
  if not req_mem or rec >= req_mem then return rec end
  local function at_most_limit(x) return math.floor(limit_bytes and math.min(x, limit_bytes) or x) end
  local bytes = field(mem, "bytes")
  if type(bytes) == "number" and rec < at_most_limit(bytes) then
    return nil, string.format("recommended_bytes %s is below the predicted peak %s", json.number(rec),
                              json.number(bytes))
  end
  local upper = field(mem, "upper_util")
  if field(mem, "recommendation_source") == "bound" and type(upper) == "number" and
     rec < at_most_limit(upper * req_mem) then
    return nil, string.format("recommended_bytes %s is below its own upper bound %s (upper_util x the request)",
                              json.number(rec), json.number(math.floor(upper * req_mem)))
  end
  return rec
end

-- The recommendation (whole-job bytes) in the job's own form: the flag, the job_desc field (none
-- for --mem-per-gpu: never written), MB per unit (rounded up) and the units. No request: --mem.
local function in_form(d, rec, form, cpus)
  if form == "cpu" then return "--mem-per-cpu", "min_mem_per_cpu", math.ceil(rec / MIB / cpus), cpus end
  if form == "gpu" then
    local gpus = gpus_of(d, true)
    return "--mem-per-gpu", nil, math.ceil(rec / MIB / gpus), gpus
  end
  local nodes = nodes_of(d)
  return "--mem", "min_mem_per_node", math.ceil(rec / MIB / nodes), nodes
end

-- MB as sbatch takes them: "16G" when whole gigabytes, else "15360M" (sbatch takes no "16.0G").
local function slurm_mb(mb)
  if mb % 1024 == 0 then return string.format("%dG", mb / 1024) end
  return string.format("%dM", mb)
end

-- The prediction and the recommendation (rec: sane_recommendation's, or nil) on sbatch's stderr.
local function tell_user(d, ans, req_mem, rec, form, cpus, part_list)
  local mem = field(ans, "predictions", "mem")
  if type(mem) ~= "table" or type(field(mem, "bytes")) ~= "number" then return end
  local msg = "peakcast: predicted peak memory " .. human(field(mem, "bytes"))
  local util = field(mem, "util")
  if type(util) == "number" and req_mem then
    msg = msg .. string.format(" (%.0f%% of the %s requested)", util * 100, human(req_mem))
  end
  if rec then
    local flag, _, mb, units = in_form(d, rec, form, cpus)
    local limit = partition_limit_mb(d, part_list, form or "node", cpus)
    if limit and mb > limit then mb = limit end
    msg = msg .. "; recommended " .. flag .. "=" .. slurm_mb(mb)
    if units > 1 then
      msg = msg .. string.format(" (%s in all over %d %s)", human(mb * units * MIB), units,
                                 form == "cpu" and "CPUs" or form == "gpu" and "GPUs" or "nodes")
    end
  end
  local vram = field(ans, "predictions", "vram")
  if type(vram) == "table" and type(field(vram, "bytes")) == "number" then
    msg = msg .. "; GPU memory " .. human(field(vram, "bytes"))
  end
  slurm.log_user("%s", msg)
end

-- Lowers the request to rec (sane_recommendation's); the new value in MB, or nil when unchanged.
local function lower_mem(d, ans, rec, req_mem, form, cpus, part_list)
  if not LOWER_MEM_TO_RECOMMENDATION or not req_mem or not rec then return nil end
  if not lowering_in_scope(d, part_list) then return nil end
  if rec >= req_mem or (form ~= "node" and form ~= "cpu") then return nil end
  local flag, key, mb = in_form(d, rec, form, cpus)
  local why = field(ans, "predictions", "mem", "recommendation_rule")
  why = type(why) == "string" and why or "recommended_bytes"
  -- The script's own sizing policy names the allocation it chose.
  local basis = field(ans, "predictions", "mem", "recommendation_basis")
  if type(basis) == "string" and basis ~= "" then why = why .. "; " .. basis end
  local floor_mb = math.ceil(d[key] * LOWER_MEM_MIN_FRACTION)
  if mb < floor_mb then
    mb = floor_mb
    why = why .. string.format("; held at LOWER_MEM_MIN_FRACTION = %g of the request", LOWER_MEM_MIN_FRACTION)
  end
  mb = math.max(LOWER_MEM_MIN_MB, mb)
  local limit = partition_limit_mb(d, part_list, form, cpus)
  if limit and mb > limit then mb = limit end
  if mb >= d[key] then return nil end  -- never raised
  log_info(string.format("lowered %s %dM -> %dM (%s)", flag, d[key], mb, why))
  d[key] = mb
  return mb
end

---------------------------------------------------------------------------------------------------
-- Circuit breaker: after BREAKER_FAILURES in a row the daemon is not asked for BREAKER_BACKOFF_S,
-- then one submission probes it. Opening is logged once per outage, recovery once.
---------------------------------------------------------------------------------------------------
local breaker = { failures = 0, open_until = 0, skipped = 0, outage = false }

local function breaker_allows()
  if breaker.open_until > now() then
    breaker.skipped = breaker.skipped + 1
    return false
  end
  return true
end

-- Returns the text to append to the failure's log line, or nil when nothing is to be logged.
local function breaker_failed()
  breaker.failures = breaker.failures + 1
  if breaker.failures < BREAKER_FAILURES then return "" end
  breaker.open_until = now() + BREAKER_BACKOFF_S
  if breaker.outage then return nil end  -- a failed probe: already reported
  breaker.outage = true
  return string.format("; %d failures in a row: not asking the daemon for %g s", breaker.failures,
                       BREAKER_BACKOFF_S)
end

local function breaker_succeeded()
  if breaker.outage then
    log_info(string.format("daemon answering again (%d submission(s) skipped while it was not)",
                           breaker.skipped))
  end
  breaker.failures, breaker.open_until, breaker.skipped, breaker.outage = 0, 0, 0, false
end

local function predict(d, submit_uid, part_list)
  if not nonempty(d.script) and not PREDICT_WITHOUT_SCRIPT then return end
  if not deps_ok then return end  -- logged once, at load
  if not breaker_allows() then return end
  local existing = d[COMMENT_FIELD]
  if nonempty(existing) and not OVERWRITE_USER_COMMENT then
    log_info("job already has a " .. COMMENT_FIELD .. "; no prediction written")
    return
  end
  local rec, script, form = build_record(d, submit_uid, part_list)
  if script and not rec.script then log_info("script over " .. MAX_SCRIPT_BYTES .. " bytes; sent without it") end
  local t0 = now()
  local status, body = http_post("/v1/predict", json.encode(rec))
  local ms = (now() - t0) * 1000
  if not status or status >= 500 then
    local why = status and string.format("HTTP %d: %s", status, body:sub(1, 200))
                       or string.format("%s after %.0f ms", body, ms)
    local tail = breaker_failed()
    if tail then log_info("no prediction (" .. why .. "); job accepted unchanged" .. tail) end
    return
  end
  breaker_succeeded()
  if status ~= 200 then
    log_info(string.format("no prediction (HTTP %d: %s); job accepted unchanged", status, body:sub(1, 200)))
    return
  end
  local ok, ans = pcall(json.decode, body)
  -- (lua-cjson decodes an array, [] included, into a table too: the text tells them apart.)
  if not ok or type(ans) ~= "table" or not body:find("^%s*{") then
    log_info("no prediction (bad answer: " .. (ok and "not a JSON object" or tostring(ans)) .. "); job accepted unchanged")
    return
  end
  -- Re-encoded: compact, valid UTF-8; slurm-sync reads answer_id by name, whatever the key order.
  local compact = json.encode(ans)
  if COMMENT_SUMMARY or #compact > MAX_COMMENT_BYTES then compact = summarize(ans) end
  d[COMMENT_FIELD] = compact
  -- A recommendation that fails the checks stays in the comment, but is neither told nor applied.
  local recommended, refused = sane_recommendation(field(ans, "predictions", "mem"), rec.req_mem_bytes,
                                                   partition_limit_bytes(d, part_list, form, rec.req_cpus))
  if refused then log_info("recommendation not used (" .. refused .. "); memory request left unchanged") end
  if TELL_USER then tell_user(d, ans, rec.req_mem_bytes, recommended, form, rec.req_cpus, part_list) end
  local mb = lower_mem(d, ans, recommended, rec.req_mem_bytes, form, rec.req_cpus, part_list)
  if mb and TELL_USER then
    slurm.log_user("%s", string.format("peakcast: memory request lowered to %s=%dM by site policy",
                                       form == "node" and "--mem" or "--mem-per-cpu", mb))
  end
end

---------------------------------------------------------------------------------------------------
-- Slurm entry points
---------------------------------------------------------------------------------------------------
function slurm_job_submit(job_desc, part_list, submit_uid)
  local ok, err = pcall(predict, job_desc, submit_uid, part_list)
  if not ok then log_info("hook error (" .. tostring(err) .. "); job accepted unchanged") end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

-- For tests run outside slurmctld (lua5.1 with a stub `slurm` table and PEAKCAST_TEST set).
if rawget(_G, "PEAKCAST_TEST") then
  local T = PEAKCAST_TEST
  T.json, T.build_record, T.gpus_in, T.max_comment_bytes = json, build_record, gpus_in, MAX_COMMENT_BYTES
  T.lower_mem_min_fraction = LOWER_MEM_MIN_FRACTION
  function T.set_comment_summary(on) COMMENT_SUMMARY = on end
  function T.set_socket(p) SOCKET_PATH = p end
  function T.set_timeout(s) TOTAL_TIMEOUT_S = s end
  function T.set_whole_core_threads(on) SLURM_CONF_WHOLE_CORE_THREADS = on end
  function T.set_breaker(n, backoff_s) BREAKER_FAILURES, BREAKER_BACKOFF_S = n, backoff_s end
  function T.reset_breaker() breaker.failures, breaker.open_until, breaker.skipped, breaker.outage = 0, 0, 0, false end
  function T.set_lower_mem_scope(partitions, accounts) LOWER_MEM_PARTITIONS, LOWER_MEM_ACCOUNTS = partitions, accounts end
  function T.set_lower_mem(on, min_mb, min_fraction)
    LOWER_MEM_TO_RECOMMENDATION = on
    LOWER_MEM_MIN_MB, LOWER_MEM_MIN_FRACTION = min_mb or LOWER_MEM_MIN_MB, min_fraction or LOWER_MEM_MIN_FRACTION
  end
  function T.set_slurm_conf_def_mem(per_cpu, per_node, per_gpu, part_per_gpu)
    SLURM_CONF_DEF_MEM_PER_CPU, SLURM_CONF_DEF_MEM_PER_NODE = per_cpu, per_node
    SLURM_CONF_DEF_MEM_PER_GPU, SLURM_CONF_PART_DEF_MEM_PER_GPU = per_gpu, part_per_gpu
  end
end
