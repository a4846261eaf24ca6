--[[
Unit test of contrib/slurm/job_submit.lua outside slurmctld, with a stub `slurm` table.
Usage: lua5.1 job_submit_unit_test.lua HOOK_FILE SOCKET MODE_FILE
SOCKET is a running standin_peakcastd.lua (MODE_FILE switches its behaviour); a path where nothing
listens is used for the fail-open cases. Prints "N passed, M failed"; exits 1 on any failure.
--]]
local hook, sock_path, mode_file = arg[1], arg[2], arg[3]
local logs, user_msgs = {}, {}
slurm = { SUCCESS = 0, ERROR = -1, NO_VAL = 4294967294, NO_VAL16 = 65534,
          log_info = function(fmt, ...) logs[#logs + 1] = string.format(fmt, ...) end,
          log_user = function(fmt, ...) user_msgs[#user_msgs + 1] = string.format(fmt, ...) end }
PEAKCAST_TEST = {}
dofile(hook)
local T = PEAKCAST_TEST
local json = T.json

local passed, failed = 0, 0
local function check(name, cond, detail)
  if cond then passed = passed + 1 else
    failed = failed + 1
    print("FAIL " .. name .. (detail and (": " .. tostring(detail)) or ""))
  end
end
local function set_mode(m) local f = io.open(mode_file, "w"); f:write(m, "\n"); f:close() end

-- JSON (lua-cjson, with the hook's own UTF-8 cleaning and numbers)
check("escape", json.encode('a"b\\c/\n\t\1\127') == '"a\\"b\\\\c\\/\\n\\t\\u0001\\u007f"', json.encode('a"b\\c/\n\t\1\127'))
check("utf8 kept", json.encode("é€😀\244\143\191\191") == '"é€😀\244\143\191\191"')
check("bad utf8 replaced", json.encode("a\255b\192\128") == '"a\239\191\189b\239\191\189\239\191\189"', json.encode("a\255b"))
-- Overlong (E0 80 80), a surrogate (ED A0 80), past U+10FFFF (F4 90 80 80), cut short (E2 82):
-- each byte replaced, as the daemon refuses them all.
for _, bad in ipairs({ "\224\128\128", "\237\160\128", "\244\144\128\128", "\226\130" }) do
  check("bad utf8 replaced " .. bad:byte(1), json.encode(bad) == '"' .. string.rep("\239\191\189", #bad) .. '"',
        json.encode(bad))
end
check("bad utf8 in a key replaced", json.encode({ ["k\255"] = 1 }) == '{"k\239\191\189":1}')
check("integers", json.encode(3221225472) == "3221225472" and json.encode(-5) == "-5")
-- Byte counts up to 2^53 are exact (lua-cjson alone prints 14 digits: 9.007199254741e+15).
check("2^53 exact", json.encode({ 2 ^ 53, 2 ^ 53 - 1 }) == "[9007199254740992,9007199254740991]",
      json.encode({ 2 ^ 53, 2 ^ 53 - 1 }))
check("2^53 round trip", json.decode(json.encode(2 ^ 53 - 1)) == 2 ^ 53 - 1)
check("float", json.decode(json.encode(0.1)) == 0.1 and json.decode(json.encode(1 / 3)) == 1 / 3, json.encode(1 / 3))
check("nan is null", json.encode(0 / 0) == "null" and json.encode({ x = 1 / 0 }) == '{"x":null}')
check("null", json.encode({ json.null, true }) == "[null,true]")

-- JSON decoding
local v = json.decode(' { "x" : [1, 2.5, -3e2, true, false, null, "s\\u00e9\\ud83d\\ude00"], "a":{"b":{"c":[]}} } ')
check("decode nested", json.encode(v.x) == '[1,2.5,-300,true,false,null,"sé😀"]' and v.x[6] == json.null and
      type(v.a.b.c) == "table", json.encode(v))
-- Refused: the hook fails open on them. (lua-cjson takes a raw control character in a string,
-- which the old decoder refused; the hook escapes it when it writes the comment.)
for _, bad in ipairs({ "", "{", "{\"a\":}", "[1,]", "nul", "{\"a\":1} x", "01", "[NaN]", "[Infinity]",
                       "[-Infinity]", "[0x10]", string.rep("[", 33) .. string.rep("]", 33) }) do
  check("reject " .. bad:sub(1, 12), not pcall(json.decode, bad))
end
check("depth 32 taken", pcall(json.decode, string.rep("[", 32) .. string.rep("]", 32)))

-- GPU strings
check("gres:gpu:1", T.gpus_in("gres:gpu:1") == 1)
check("gres:gpu:a100:2", T.gpus_in("gres:gpu:a100:2") == 2)
check("gpu:2", T.gpus_in("gpu:2") == 2)
check("gres/gpu=3", T.gpus_in("gres/gpu=3") == 3)
check("gpu alone", T.gpus_in("gres:gpu") == 1)
check("mixed", T.gpus_in("gres:foo:4,gres:gpu:2") == 2)
check("no gpu", T.gpus_in("gres:foo:4") == nil and T.gpus_in(nil) == nil)

-- Record building
local function desc(t)
  local d = { script = "#!/bin/bash\necho hi\n", user_name = "alice", user_id = 1000, name = "j",
              time_limit = slurm.NO_VAL, num_tasks = slurm.NO_VAL, cpus_per_task = slurm.NO_VAL16,
              min_cpus = slurm.NO_VAL, min_nodes = slurm.NO_VAL }
  for k, x in pairs(t or {}) do d[k] = x end
  return d
end
local r = T.build_record(desc({ min_mem_per_cpu = 400, num_tasks = 2, min_cpus = 2, time_limit = 5,
                                tres_per_job = "gres:gpu:2", partition = "debug", account = "acct" }), 1000)
check("per cpu mem", r.req_mem_bytes == 800 * 1048576, r.req_mem_bytes)
check("cpus", r.req_cpus == 2, r.req_cpus)
check("gpus per job", r.req_gpus == 2)
check("time", r.req_time_s == 300)
check("pending id", r.job_id == "pending")
r = T.build_record(desc({ min_mem_per_node = 500, min_nodes = 2, tres_per_node = "gres:gpu:1" }), 1000)
check("per node mem x nodes", r.req_mem_bytes == 1000 * 1048576, r.req_mem_bytes)
check("gpus per node x nodes", r.req_gpus == 2)
r = T.build_record(desc({ tres_per_task = "gres:gpu:1", num_tasks = 3, cpus_per_task = 2 }), 1000)
check("gpus per task", r.req_gpus == 3 and r.req_cpus == 6 and r.req_mem_bytes == nil)
-- --gpus-per-socket=N needs --sockets-per-node=S (sbatch refuses it alone); slurmctld 22.05.8
-- records N x S x nodes in ReqTRES (on a 2-socket node: =1 with S=1 gres/gpu=1, with S=2 and -B 2
-- gres/gpu=2, =2 with S=1 gres/gpu=2). Until 2026-12-06 the hook sent N x nodes, one socket a node.
r = T.build_record(desc({ tres_per_socket = "gres:gpu:1", sockets_per_node = 2, num_tasks = 1 }), 1000)
check("gpus per socket x sockets per node", r.req_gpus == 2, r.req_gpus)
r = T.build_record(desc({ tres_per_socket = "gres:gpu:2", sockets_per_node = 3, min_nodes = 2 }), 1000)
check("gpus per socket x sockets per node x nodes", r.req_gpus == 12, r.req_gpus)
r = T.build_record(desc({ tres_per_socket = "gres:gpu:1", sockets_per_node = 1 }), 1000)
check("gpus per socket, one socket per node", r.req_gpus == 1, r.req_gpus)
r = T.build_record(desc({ tres_per_socket = "gres:gpu:1", sockets_per_node = slurm.NO_VAL16 }), 1000)
check("gpus per socket, sockets per node unset: no count", r.req_gpus == nil, r.req_gpus)
r = T.build_record(desc({ tres_per_socket = "gres:gpu:1" }), 1000)
check("gpus per socket, no sockets per node field: no count", r.req_gpus == nil, r.req_gpus)
-- --mem-per-gpu: slurmctld 22.05 gives it as mem_per_tres "gres:gpu:<MB>" (min_mem_per_node and
-- min_mem_per_cpu nil), and accounts the job at MB x its GPUs (sacct ReqMem 8G for
-- --mem-per-gpu=4G --gpus=2, read live). Before, the hook sent no memory request at all.
r = T.build_record(desc({ mem_per_tres = "gres:gpu:4096", tres_per_job = "gres:gpu:2" }), 1000)
check("per gpu mem x gpus (--gpus)", r.req_mem_bytes == 8192 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ mem_per_tres = "gres:gpu:1000", tres_per_node = "gres:gpu:a100:2", min_nodes = 2 }), 1000)
check("per gpu mem x gpus (--gres per node x nodes)", r.req_mem_bytes == 4000 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ mem_per_tres = "gres:gpu:1000" }), 1000)
check("per gpu mem without a GPU count: none", r.req_mem_bytes == nil, r.req_mem_bytes)
-- The count is read only where the request states it (job_desc has no mem_per_gpu field:
-- --mem-per-gpu is mem_per_tres): --gpus-per-task x -n; not --gpus-per-socket (sockets per node
-- are not in the request) nor --gpus-per-task without -n (slurmctld picks the tasks).
r = T.build_record(desc({ mem_per_tres = "gres:gpu:1000", tres_per_task = "gres:gpu:1", num_tasks = 3 }), 1000)
check("per gpu mem x gpus (--gpus-per-task x -n)", r.req_mem_bytes == 3000 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ mem_per_tres = "gres:gpu:1000", tres_per_socket = "gres:gpu:1" }), 1000)
check("per gpu mem with --gpus-per-socket: none", r.req_mem_bytes == nil, r.req_mem_bytes)
-- --gpus-per-socket=N allocates N on each socket the job's cores are on (22.05's cons_tres
-- _set_sock_bits), raised to --sockets-per-node only where gres.conf binds the GPUs to sockets:
-- not known at submission, but for -B 1 and one CPU a node (one core, one socket), where it is
-- N x nodes, as ReqTRES and AllocTRES count it (slurm_integration's mapsock1).
r = T.build_record(desc({ mem_per_tres = "gres:gpu:100", tres_per_socket = "gres:gpu:1", sockets_per_node = 1,
                          num_tasks = 1 }), 1000)
check("per gpu mem x --gpus-per-socket, -B 1, one CPU", r.req_mem_bytes == 100 * 1048576 and r.req_gpus == 1,
      tostring(r.req_mem_bytes) .. " " .. tostring(r.req_gpus))
r = T.build_record(desc({ mem_per_tres = "gres:gpu:100", tres_per_socket = "gres:gpu:2", sockets_per_node = 1,
                          num_tasks = 3, min_nodes = 3 }), 1000)
check("per gpu mem x --gpus-per-socket x nodes, -B 1, one CPU a node", r.req_mem_bytes == 600 * 1048576,
      r.req_mem_bytes)
for what, t in pairs({ ["-B 2"] = { sockets_per_node = 2, num_tasks = 1 },
                       ["-B 1 -n 2"] = { sockets_per_node = 1, num_tasks = 2 },
                       ["-B 1 -c 2"] = { sockets_per_node = 1, cpus_per_task = 2 },
                       ["-B 1 --ntasks-per-node=2"] = { sockets_per_node = 1, ntasks_per_node = 2 },
                       ["-B 1 --cpus-per-gpu=2"] = { sockets_per_node = 1, cpus_per_tres = "gres:gpu:2" } }) do
  t.mem_per_tres, t.tres_per_socket = "gres:gpu:100", "gres:gpu:1"
  r = T.build_record(desc(t), 1000)
  check("per gpu mem with --gpus-per-socket " .. what .. ": none", r.req_mem_bytes == nil, r.req_mem_bytes)
end
-- A count-less item is a count of 1 to slurmctld (gres.c's TRES parser: "No type or explicit
-- count. Count is 1 by default"), in mem_per_tres 1 MB per GPU. sbatch always writes the MB.
r = T.build_record(desc({ mem_per_tres = "gres:gpu", tres_per_job = "gres:gpu:2" }), 1000)
check("per gpu mem without a count: 1 MB per GPU", r.req_mem_bytes == 2 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ mem_per_tres = "gres:gpu:1000", tres_per_task = "gres:gpu:1" }), 1000)
check("per gpu mem with --gpus-per-task, no -n: none", r.req_mem_bytes == nil, r.req_mem_bytes)
local enc = json.encode(r)
check("no unknown keys", not enc:find('"x') and enc:find('"user":"alice"') ~= nil, enc)
-- The partition sent is the one(s) the job may run in, as Slurm resolves them: the daemon sizes
-- by their settings (a raw "gpu, cpu" or nothing at all got its "default" ones).
local default_parts = { debug = { name = "debug", flag_default = 1 }, gpu = { name = "gpu", flag_default = 0 } }
r = T.build_record(desc({ partition = "gpu, cpu,gpu" }), 1000, default_parts)
check("partition: a list, blanks and repeats dropped", r.partition == "gpu,cpu", r.partition)
r = T.build_record(desc({}), 1000, default_parts)
check("partition: none named -> the default one", r.partition == "debug", r.partition)
r = T.build_record(desc({}), 1000, {})
check("partition: none named, no default known -> none sent", r.partition == nil, r.partition)
-- No -t: slurmctld gives the job its partition's DefaultTime, else its MaxTime (sacct Timelimit
-- 00:30:00 for DefaultTime=30 MaxTime=120, 01:00:00 for MaxTime=60, UNLIMITED for
-- MaxTime=INFINITE; part_list fields read live on 22.05: an unset DefaultTime is NO_VAL,
-- INFINITE is 4294967295). Before, the hook sent no time limit for such jobs.
local function tpart(fields) return setmetatable({}, { __index = function(_, k) return fields[k] end }) end
local tparts = {
  dt = tpart({ name = "dt", flag_default = 0, default_time = 30, max_time = 120 }),
  dn = tpart({ name = "dn", flag_default = 0, default_time = slurm.NO_VAL, max_time = 60 }),
  dn2 = tpart({ name = "dn2", flag_default = 0, default_time = slurm.NO_VAL, max_time = 60 }),
  debug = tpart({ name = "debug", flag_default = 1, default_time = slurm.NO_VAL, max_time = 4294967295 }),
}
r = T.build_record(desc({ partition = "dt" }), 1000, tparts)
check("time: none asked -> the partition's DefaultTime", r.req_time_s == 1800, r.req_time_s)
r = T.build_record(desc({ partition = "dn" }), 1000, tparts)
check("time: none asked, no DefaultTime -> the partition's MaxTime", r.req_time_s == 3600, r.req_time_s)
r = T.build_record(desc({}), 1000, tparts)
check("time: none asked, default partition MaxTime=INFINITE -> none", r.req_time_s == nil, r.req_time_s)
r = T.build_record(desc({ partition = "dt", time_limit = 5 }), 1000, tparts)
check("time: the job's own -t wins", r.req_time_s == 300, r.req_time_s)
r = T.build_record(desc({ partition = "dn,dn2" }), 1000, tparts)
check("time: partitions that agree -> theirs", r.req_time_s == 3600, r.req_time_s)
r = T.build_record(desc({ partition = "dt,dn" }), 1000, tparts)
check("time: partitions that differ -> none (it depends where the job runs)", r.req_time_s == nil, r.req_time_s)
r = T.build_record(desc({ partition = "dt" }), 1000)
check("time: no part_list -> none", r.req_time_s == nil, r.req_time_s)
-- slurmctld's part_list records raise on a field they lack (DefaultTime unset, no DefMemPerCPU):
-- every read of one is guarded, and the fields it has still count.
local raising = setmetatable({}, { __index = function(_, k)
  local v = ({ name = "strict", flag_default = 1, max_time = 60, def_mem_per_node = 700 })[k]
  if v == nil then error("no field " .. k) end
  return v
end })
r = T.build_record(desc({}), 1000, { strict = raising })
check("part_list record that raises on a missing field", r.partition == "strict" and r.req_time_s == 3600 and
      r.req_mem_bytes == 700 * 1048576, json.encode(r))
-- No --mem/--mem-per-cpu/--mem-per-gpu: slurmctld gives the job its partition's DefMemPerCPU x
-- CPUs or DefMemPerNode x nodes (sacct ReqMem 300M for DefMemPerCPU=300 -n 1, 700M for
-- DefMemPerNode=700; part_list shows the one a partition sets, read live on 22.05). A partition
-- that sets neither (def_mem_per_node 0) takes slurm.conf's global default, which part_list does
-- not show: unknown unless the site gives it (below).
local mparts = {
  dc = tpart({ name = "dc", flag_default = 0, def_mem_per_cpu = 300 }),
  dn = tpart({ name = "dn", flag_default = 0, def_mem_per_node = 700 }),
  dn2 = tpart({ name = "dn2", flag_default = 0, def_mem_per_node = 700 }),
  debug = tpart({ name = "debug", flag_default = 1, def_mem_per_node = 0 }),
}
r = T.build_record(desc({ partition = "dc", num_tasks = 2, min_cpus = 2 }), 1000, mparts)
check("mem: none asked -> DefMemPerCPU x CPUs", r.req_mem_bytes == 600 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ partition = "dn", min_nodes = 2 }), 1000, mparts)
check("mem: none asked -> DefMemPerNode x nodes", r.req_mem_bytes == 1400 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ partition = "dn,dn2" }), 1000, mparts)
check("mem: partitions that agree -> theirs", r.req_mem_bytes == 700 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ partition = "dc,dn" }), 1000, mparts)
check("mem: partitions that differ -> none", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({}), 1000, mparts)
check("mem: the global default (not in part_list) -> none", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ partition = "dc", min_mem_per_node = 100 }), 1000, mparts)
check("mem: the job's own request wins", r.req_mem_bytes == 100 * 1048576, r.req_mem_bytes)
-- The global default, given to the hook as SLURM_CONF_DEF_MEM_PER_CPU/_NODE (slurm.conf's
-- DefMemPerCPU/DefMemPerNode; 22.05's Lua API does not show it): slurmctld gives it to a job in a
-- partition that sets neither (sacct ReqMem 1000M for the test cluster's global DefMemPerCPU=500
-- -n 2 in debug), and a partition's own wins over it.
T.set_slurm_conf_def_mem(500, nil)
r = T.build_record(desc({ num_tasks = 2, min_cpus = 2 }), 1000, mparts)
check("mem: global DefMemPerCPU x CPUs where the partition sets none", r.req_mem_bytes == 1000 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ partition = "dc", num_tasks = 2, min_cpus = 2 }), 1000, mparts)
check("mem: the partition's DefMemPerCPU wins over the global one", r.req_mem_bytes == 600 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ partition = "dn,debug" }), 1000, mparts)
check("mem: partition DefMemPerNode 700 vs global 500/CPU -> none", r.req_mem_bytes == nil, r.req_mem_bytes)
T.set_slurm_conf_def_mem(nil, 700)
r = T.build_record(desc({ partition = "dn,debug", min_nodes = 2 }), 1000, mparts)
check("mem: global DefMemPerNode x nodes, agreeing with a partition's", r.req_mem_bytes == 1400 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ min_mem_per_cpu = 100 }), 1000, mparts)
check("mem: the job's own request wins over the global default", r.req_mem_bytes == 100 * 1048576, r.req_mem_bytes)
-- A --mem-per-gpu whose GPU count is unknown is the job's own request: no default stands in.
r = T.build_record(desc({ partition = "dc", mem_per_tres = "gres:gpu:1000", tres_per_socket = "gres:gpu:1" }), 1000, mparts)
check("mem: --mem-per-gpu, count unknown -> none, not the partition's default", r.req_mem_bytes == nil, r.req_mem_bytes)
-- slurm.conf's global DefMemPerGPU, given as SLURM_CONF_DEF_MEM_PER_GPU (no Lua field shows it,
-- nor a partition's own: both are in job_defaults): under select/cons_tres a job that asks for
-- GPUs and no memory gets it x its GPUs, in place of any DefMemPerCPU/DefMemPerNode (the
-- partition's included); a job without GPUs keeps those.
T.set_slurm_conf_def_mem(500, nil, 2000)
r = T.build_record(desc({ tres_per_job = "gres:gpu:2", num_tasks = 2, min_cpus = 2 }), 1000, mparts)
check("mem: global DefMemPerGPU x GPUs (--gpus)", r.req_mem_bytes == 4000 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ partition = "dc", tres_per_node = "gres:gpu:1", min_nodes = 2 }), 1000, mparts)
check("mem: DefMemPerGPU wins over the partition's DefMemPerCPU for a GPU job", r.req_mem_bytes == 4000 * 1048576,
      r.req_mem_bytes)
r = T.build_record(desc({ tres_per_task = "gres:gpu:1", num_tasks = 3 }), 1000, mparts)
check("mem: DefMemPerGPU x --gpus-per-task x -n", r.req_mem_bytes == 6000 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ num_tasks = 2, min_cpus = 2 }), 1000, mparts)
check("mem: no GPUs -> DefMemPerCPU as before", r.req_mem_bytes == 1000 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ tres_per_socket = "gres:gpu:1" }), 1000, mparts)
check("mem: DefMemPerGPU, GPU count not stated -> none", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ tres_per_job = "gres:gpu:2", min_mem_per_node = 100 }), 1000, mparts)
check("mem: the job's own --mem wins over DefMemPerGPU", r.req_mem_bytes == 100 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ tres_per_job = "gres:gpu:2", mem_per_tres = "gres:gpu:300" }), 1000, mparts)
check("mem: the job's own --mem-per-gpu wins over DefMemPerGPU", r.req_mem_bytes == 600 * 1048576, r.req_mem_bytes)
T.set_slurm_conf_def_mem(nil, nil, nil)
-- A partition's own DefMemPerGPU (PartitionName=... DefMemPerGPU=): no Lua field shows it either,
-- so the site copies it into SLURM_CONF_PART_DEF_MEM_PER_GPU by partition name. slurmctld gives a
-- GPU job that asks for no memory the partition's value x its GPUs, else the global one; until
-- 2026-12-06 the hook sent such a job the partition's DefMemPerCPU x CPUs ("dc": 600 MiB for
-- 2 CPUs), or the global DefMemPerGPU.
T.set_slurm_conf_def_mem(500, nil, nil, { dc = 250 })
local function count_logs(text)
  local n = 0
  for _, l in ipairs(logs) do if l:find(text, 1, true) then n = n + 1 end end
  return n
end
r = T.build_record(desc({ partition = "dc", tres_per_job = "gres:gpu:2", num_tasks = 2, min_cpus = 2 }), 1000, mparts)
check("mem: the partition's DefMemPerGPU x GPUs", r.req_mem_bytes == 500 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ partition = "dc", num_tasks = 2, min_cpus = 2 }), 1000, mparts)
check("mem: the partition's DefMemPerGPU, no GPUs -> its DefMemPerCPU", r.req_mem_bytes == 600 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ tres_per_job = "gres:gpu:2", num_tasks = 2, min_cpus = 2 }), 1000, mparts)
check("mem: another partition's DefMemPerGPU does not apply", r.req_mem_bytes == 1000 * 1048576, r.req_mem_bytes)
-- Where the hook knows no DefMemPerGPU for a GPU job's partition, it says once per partition that
-- one it cannot see would make the default it sends wrong.
local unseen = "partition dn2: a GPU job without a memory request is sent its DefMemPerCPU/DefMemPerNode default"
check("mem: not logged before a GPU job in the partition", count_logs(unseen) == 0, count_logs(unseen))
for _ = 1, 2 do
  r = T.build_record(desc({ partition = "dn2", tres_per_job = "gres:gpu:1" }), 1000, mparts)
  check("mem: no DefMemPerGPU known -> DefMemPerNode", r.req_mem_bytes == 700 * 1048576, r.req_mem_bytes)
end
check("mem: no DefMemPerGPU known -> logged once for the partition", count_logs(unseen) == 1, count_logs(unseen))
check("mem: ... naming where to copy it", count_logs(unseen .. " (if any); job_submit/lua shows no DefMemPerGPU, so one " ..
      "set on this partition is not seen unless copied into SLURM_CONF_PART_DEF_MEM_PER_GPU") == 1)
T.set_slurm_conf_def_mem(500, nil, 2000, { dc = 250 })
r = T.build_record(desc({ partition = "dc", tres_per_node = "gres:gpu:1", min_nodes = 2 }), 1000, mparts)
check("mem: the partition's DefMemPerGPU wins over the global one", r.req_mem_bytes == 500 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ tres_per_job = "gres:gpu:1" }), 1000, mparts)
check("mem: a partition without one takes the global DefMemPerGPU", r.req_mem_bytes == 2000 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ partition = "dc,debug", tres_per_job = "gres:gpu:1" }), 1000, mparts)
check("mem: partitions with different DefMemPerGPU -> none", r.req_mem_bytes == nil, r.req_mem_bytes)
T.set_slurm_conf_def_mem(nil, nil, nil, { dc = 2000, debug = 2000 })
r = T.build_record(desc({ partition = "dc,debug", tres_per_job = "gres:gpu:1" }), 1000, mparts)
check("mem: partitions that agree on DefMemPerGPU", r.req_mem_bytes == 2000 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ partition = "dc", tres_per_job = "gres:gpu:2", mem_per_tres = "gres:gpu:300" }), 1000, mparts)
check("mem: the job's own --mem-per-gpu wins over the partition's", r.req_mem_bytes == 600 * 1048576, r.req_mem_bytes)
T.set_slurm_conf_def_mem(nil, nil, nil, nil)
-- Memory the request does not size (slurmctld 22.05.8, observed in slurm_hook_test.sh on a 2-CPU,
-- 2-GPU, RealMemory=2000 node): --mem=0 and --mem-per-cpu=0 give the job every node's whole
-- memory (AllocTRES mem=2000M), which job_submit/lua does not show; --exclusive (job_desc.shared
-- 0) and OverSubscribe=EXCLUSIVE partitions (part_list max_share 0) give it every CPU and GPU of
-- its nodes, and per-CPU / per-GPU memory is charged on them (-n 1 --mem-per-cpu=100M: AllocTRES
-- cpu=2, mem=200M). The hook sent 500M (the global DefMemPerCPU) for --mem=0 and 100M for the
-- exclusive one, while the history learns AllocTRES: the daemon scaled a utilization learned on
-- 200M by 100M. Now no request is sent (nothing to scale, nothing lowered); --mem is per node
-- whatever the CPUs, and --exclusive=user (shared 2) allocates the CPUs asked for.
T.set_slurm_conf_def_mem(500, nil, 250, nil)
local xparts = { debug = tpart({ name = "debug", flag_default = 1, max_share = 1 }),
                 excl = tpart({ name = "excl", flag_default = 0, max_share = 0 }) }
r = T.build_record(desc({ min_mem_per_node = 0 }), 1000, xparts)
check("whole node: --mem=0 -> no request, not the default", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ min_mem_per_cpu = 0 }), 1000, xparts)
check("whole node: --mem-per-cpu=0 -> no request, not the default", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ min_mem_per_cpu = 100, shared = 0 }), 1000, xparts)
check("exclusive: --mem-per-cpu -> no request (charged on every CPU of the node)", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ shared = 0, num_tasks = 2, min_cpus = 2 }), 1000, xparts)
check("exclusive: DefMemPerCPU -> no request", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ shared = 0, mem_per_tres = "gres:gpu:100", tres_per_job = "gres:gpu:1" }), 1000, xparts)
check("exclusive: --mem-per-gpu -> no request (charged on every GPU of the node)", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ shared = 0, tres_per_job = "gres:gpu:1" }), 1000, xparts)
check("exclusive: DefMemPerGPU -> no request", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ min_mem_per_cpu = 100, partition = "excl" }), 1000, xparts)
check("OverSubscribe=EXCLUSIVE partition: --mem-per-cpu -> no request", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ min_mem_per_cpu = 100, partition = "debug,excl" }), 1000, xparts)
check("one of its partitions EXCLUSIVE: --mem-per-cpu -> no request", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ min_mem_per_node = 300, shared = 0, min_nodes = 2 }), 1000, xparts)
check("exclusive: --mem is per node -> sent", r.req_mem_bytes == 600 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ min_mem_per_cpu = 100, shared = 2 }), 1000, xparts)
check("--exclusive=user: --mem-per-cpu x the CPUs asked for", r.req_mem_bytes == 100 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ min_mem_per_cpu = 100, shared = slurm.NO_VAL16 }), 1000, xparts)
check("not exclusive: --mem-per-cpu x the CPUs asked for", r.req_mem_bytes == 100 * 1048576, r.req_mem_bytes)
-- --cpus-per-gpu (cpus_per_tres "gres:gpu:N") without -n: slurmctld allocates N CPUs per GPU and
-- charges --mem-per-cpu on them (--gpus=2 --cpus-per-gpu=1 --mem-per-cpu=100M: ReqCPUS 1,
-- AllocTRES cpu=2, mem=200M, observed); the hook counted 1 CPU and sent 100M. Per-GPU memory
-- does not depend on the CPUs.
r = T.build_record(desc({ min_mem_per_cpu = 100, tres_per_job = "gres:gpu:2", cpus_per_tres = "gres:gpu:1" }), 1000, xparts)
check("--cpus-per-gpu: --mem-per-cpu -> no request", r.req_mem_bytes == nil and r.req_cpus == 1, r.req_mem_bytes)
r = T.build_record(desc({ tres_per_job = "gres:gpu:2", cpus_per_tres = "gres:gpu:1" }), 1000, xparts)
check("--cpus-per-gpu: DefMemPerGPU x GPUs still sent", r.req_mem_bytes == 500 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ mem_per_tres = "gres:gpu:100", tres_per_job = "gres:gpu:2", cpus_per_tres = "gres:gpu:1" }),
                   1000, xparts)
check("--cpus-per-gpu: --mem-per-gpu x GPUs still sent", r.req_mem_bytes == 200 * 1048576, r.req_mem_bytes)
-- SLURM_CONF_WHOLE_CORE_THREADS: whole cores (CR_Core*/CR_Socket*) of nodes with more than one
-- thread each: per-CPU memory is charged on every thread of the cores allocated, which the hook
-- cannot count (-n 1 gets a core's threads).
T.set_whole_core_threads(true)
r = T.build_record(desc({ min_mem_per_cpu = 100 }), 1000, xparts)
check("whole cores of several threads: --mem-per-cpu -> no request", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ num_tasks = 2, min_cpus = 2 }), 1000, xparts)
check("whole cores of several threads: DefMemPerCPU -> no request", r.req_mem_bytes == nil, r.req_mem_bytes)
r = T.build_record(desc({ min_mem_per_node = 300 }), 1000, xparts)
check("whole cores of several threads: --mem -> sent", r.req_mem_bytes == 300 * 1048576, r.req_mem_bytes)
r = T.build_record(desc({ tres_per_job = "gres:gpu:2" }), 1000, xparts)
check("whole cores of several threads: DefMemPerGPU x GPUs still sent", r.req_mem_bytes == 500 * 1048576, r.req_mem_bytes)
T.set_whole_core_threads(false)
T.set_slurm_conf_def_mem(nil, nil, nil, nil)

-- End to end against the stand-in. The answer checks get a generous budget: on a loaded CI
-- machine the Lua stand-in can take longer than the production 200 ms, and those checks are
-- about what the hook does with an answer. The fail-open cases below run at the real budget.
local PRODUCTION_TIMEOUT_S = 0.2
T.set_socket(sock_path)
T.set_timeout(2.0)
set_mode("ok")
local d = desc({ min_mem_per_node = 1000 })
check("submit rc", slurm_job_submit(d, {}, 1000) == 0)
local ans = d.comment and json.decode(d.comment)
check("comment is the answer", ans and ans.predictions and ans.predictions.mem.bytes == 500 * 1048576, d.comment)
check("request unchanged (advise)", d.min_mem_per_node == 1000)
check("log_user told", #user_msgs == 1 and user_msgs[1]:find("recommended --mem=750M", 1, true), user_msgs[1])
check("comment keeps the answer's id", ans and type(ans.answer_id) == "string" and ans.answer_id:find("^standin") ~= nil,
      d.comment)
-- A byte count near 2^53 goes to the daemon and back into the comment exactly: --mem=2^33 MB is
-- 2^53 bytes, the stand-in predicts half of what it was sent (2^52) and recommends 3/4 of it.
d = desc({ min_mem_per_node = 2 ^ 33 })
slurm_job_submit(d, {}, 1000)
local big = d.comment and json.decode(d.comment)
check("2^53 bytes: sent and written back exactly", big and big.predictions.mem.bytes == 2 ^ 52 and
      big.predictions.mem.recommended_bytes == 0.75 * 2 ^ 53 and d.comment:find('"bytes":4503599627370496', 1, true) ~= nil,
      d.comment)
-- An answer over MAX_COMMENT_BYTES: its summary, which keeps the id (slurm-sync matches the
-- completion to the answer by it) and the recommendation.
set_mode("long")
d = desc({ min_mem_per_node = 1000 })
slurm_job_submit(d, {}, 1000)
local short = d.comment and json.decode(d.comment)
check("long answer: a summary within the limit", d.comment and #d.comment <= T.max_comment_bytes and
      short and short.predictions.mem.rationale == nil, d.comment and #d.comment)
check("long answer: the summary keeps the id and the recommendation",
      short and type(short.answer_id) == "string" and short.answer_id ~= ans.answer_id and
      short.predictions.mem.recommended_bytes == 750 * 1048576, d.comment)
-- COMMENT_SUMMARY: the summary for every answer, whatever its size.
set_mode("ok")
T.set_comment_summary(true)
d = desc({ min_mem_per_node = 1000 })
slurm_job_submit(d, {}, 1000)
local summary = d.comment and json.decode(d.comment)
check("COMMENT_SUMMARY: the summary, shorter than the answer", summary and #d.comment < 400 and
      summary.predictions.mem.rationale == nil and type(summary.answer_id) == "string" and
      summary.predictions.mem.recommended_bytes == 750 * 1048576, d.comment and #d.comment)
T.set_comment_summary(false)

d = desc({ min_mem_per_node = 1000, comment = "mine" })
slurm_job_submit(d, {}, 1000)
check("user comment kept", d.comment == "mine")

-- LOWER_MEM_TO_RECOMMENDATION (the stand-in recommends 0.75 x the request)
T.set_lower_mem(true)
d = desc({ min_mem_per_node = 1000 })
slurm_job_submit(d, {}, 1000)
check("lower: --mem lowered", d.min_mem_per_node == 750, d.min_mem_per_node)
check("lower: logged with the rule and the basis",
      logs[#logs]:find("lowered --mem 1000M -> 750M (default: upper+margin; the largest peak + 3 % (over its last 12 runs))", 1, true),
      logs[#logs])
check("lower: user told", user_msgs[#user_msgs]:find("lowered to --mem=750M", 1, true), user_msgs[#user_msgs])
d = desc({ min_mem_per_node = 300 })
slurm_job_submit(d, {}, 1000)
check("lower: floor", d.min_mem_per_node == 256, d.min_mem_per_node)
d = desc({ min_mem_per_node = 200 })
slurm_job_submit(d, {}, 1000)
check("lower: never raised to the floor", d.min_mem_per_node == 200, d.min_mem_per_node)
d = desc({ min_mem_per_cpu = 1000, num_tasks = 4, min_cpus = 4 })
slurm_job_submit(d, {}, 1000)
check("lower: --mem-per-cpu lowered", d.min_mem_per_cpu == 750 and d.min_mem_per_node == nil, d.min_mem_per_cpu)
-- Never lowered on a request that is not the memory the job runs under: an --exclusive
-- --mem-per-cpu job is charged on every CPU of its nodes, --mem=0 gets their whole memory.
user_msgs = {}
d = desc({ min_mem_per_cpu = 1000, num_tasks = 4, min_cpus = 4, shared = 0 })
slurm_job_submit(d, {}, 1000)
check("lower: --exclusive --mem-per-cpu not lowered", d.min_mem_per_cpu == 1000, d.min_mem_per_cpu)
check("lower: --exclusive --mem-per-cpu: no recommendation told", not (user_msgs[1] or ""):find("recommended", 1, true),
      user_msgs[1])
d = desc({ min_mem_per_node = 0 })
slurm_job_submit(d, {}, 1000)
check("lower: --mem=0 not set to a value", d.min_mem_per_node == 0 and d.min_mem_per_cpu == nil, d.min_mem_per_node)
-- --mem-per-gpu is not a form the hook lowers (mem_per_tres is left as the user gave it).
d = desc({ mem_per_tres = "gres:gpu:4096", tres_per_job = "gres:gpu:2" })
slurm_job_submit(d, {}, 1000)
check("lower: --mem-per-gpu left alone", d.mem_per_tres == "gres:gpu:4096" and d.min_mem_per_node == nil and
      d.min_mem_per_cpu == nil, d.min_mem_per_node or d.min_mem_per_cpu)
d = desc({})
slurm_job_submit(d, {}, 1000)
check("lower: no request, nothing set", d.min_mem_per_node == nil and d.min_mem_per_cpu == nil)
d = desc({ partition = "dc" })
slurm_job_submit(d, mparts, 1000)
check("lower: a partition's default memory is not lowered", d.min_mem_per_node == nil and d.min_mem_per_cpu == nil,
      d.min_mem_per_node or d.min_mem_per_cpu)
-- A partition limit below the recommendation: lowered to the limit, never above it.
local parts = { { name = "small", max_mem_per_node = 600 }, { name = "big", max_mem_per_node = 900 } }
d = desc({ min_mem_per_node = 1000, partition = "small" })
slurm_job_submit(d, parts, 1000)
check("lower: capped at the partition limit", d.min_mem_per_node == 600, d.min_mem_per_node)
d = desc({ min_mem_per_node = 1000, partition = "big" })
slurm_job_submit(d, parts, 1000)
check("lower: partition limit above the recommendation", d.min_mem_per_node == 750, d.min_mem_per_node)
-- part_list as slurmctld 22.05 passes it (read live by slurm_hook_test.sh): a table keyed by
-- partition name whose records answer through __index; no limit = max_mem_per_node 0;
-- MaxMemPerNode=UNLIMITED = max_mem_per_cpu 2^63 - 1 (INFINITE64 with the MEM_PER_CPU bit cleared).
local function part(fields) return setmetatable({}, { __index = function(_, k) return fields[k] end }) end
local slurm_parts = {
  debug = part({ name = "debug", flag_default = 1, max_mem_per_node = 0 }),
  small = part({ name = "small", flag_default = 0, max_mem_per_node = 600 }),
  big = part({ name = "big", flag_default = 0, max_mem_per_node = 900 }),
  unl = part({ name = "unl", flag_default = 0, max_mem_per_cpu = 2 ^ 63 - 1 }),
  percpu = part({ name = "percpu", flag_default = 0, max_mem_per_cpu = 150 }),
  pernode = part({ name = "pernode", flag_default = 0, max_mem_per_node = 2000 }),
}
local function lowered(fields, parts)
  local dd = desc(fields)
  slurm_job_submit(dd, parts or slurm_parts, 1000)
  return dd.min_mem_per_node or dd.min_mem_per_cpu
end
check("part_list: no partition named -> the default one's limit, not another's",
      lowered({ min_mem_per_node = 1000 }) == 750, lowered({ min_mem_per_node = 1000 }))
check("part_list: the default partition's own limit applies",
      lowered({ min_mem_per_node = 1000 }, { d = part({ name = "d", flag_default = 1, max_mem_per_node = 600 }),
                                             o = part({ name = "o", flag_default = 0, max_mem_per_node = 0 }) }) == 600)
check("part_list: a named partition, keyed by name", lowered({ min_mem_per_node = 1000, partition = "small" }) == 600)
check("part_list: several partitions -> the smallest limit",
      lowered({ min_mem_per_node = 1000, partition = "big,small" }) == 600)
check("part_list: UNLIMITED (2^63 - 1 per CPU) clamps no --mem",
      lowered({ min_mem_per_node = 1000, partition = "unl" }) == 750)
check("part_list: UNLIMITED clamps no --mem-per-cpu",
      lowered({ min_mem_per_cpu = 1000, num_tasks = 4, min_cpus = 4, partition = "unl" }) == 750)
check("part_list: MaxMemPerCPU caps --mem-per-cpu",
      lowered({ min_mem_per_cpu = 1000, num_tasks = 4, min_cpus = 4, partition = "percpu" }) == 150)
check("part_list: MaxMemPerCPU x CPUs caps --mem (4 x 150)",
      lowered({ min_mem_per_node = 1000, num_tasks = 4, min_cpus = 4, partition = "percpu" }) == 600)
check("part_list: MaxMemPerNode / CPUs caps --mem-per-cpu (2000 / 4)",
      lowered({ min_mem_per_cpu = 1000, num_tasks = 4, min_cpus = 4, partition = "pernode" }) == 500)
check("part_list: a partition the user cannot use (absent) sets no limit",
      lowered({ min_mem_per_node = 1000, partition = "hidden" }) == 750)
-- A staged roll-out: lowered only in the listed partitions and accounts.
T.set_lower_mem_scope({ small = true, big = true }, nil)
check("scope: a listed partition is lowered", lowered({ min_mem_per_node = 1000, partition = "small" }) == 600)
check("scope: every partition it may run in listed", lowered({ min_mem_per_node = 1000, partition = "small,big" }) == 600)
check("scope: one of its partitions not listed: advised only",
      lowered({ min_mem_per_node = 1000, partition = "small,debug" }) == 1000)
check("scope: no partition named -> the default one (debug), not listed",
      lowered({ min_mem_per_node = 1000 }) == 1000)
T.set_lower_mem_scope({ debug = true }, nil)
check("scope: no partition named -> the default one (debug), listed",
      lowered({ min_mem_per_node = 1000 }) == 750)
check("scope: no part_list and no partition named: nothing known, advised only",
      lowered({ min_mem_per_node = 1000 }, {}) == 1000)
T.set_lower_mem_scope(nil, { physics = true })
check("scope: a listed account is lowered", lowered({ min_mem_per_node = 1000, account = "physics" }) == 750)
check("scope: another account: advised only", lowered({ min_mem_per_node = 1000, account = "chem" }) == 1000)
check("scope: no account -> the user's default account",
      lowered({ min_mem_per_node = 1000, default_account = "physics" }) == 750)
check("scope: no account at all: advised only", lowered({ min_mem_per_node = 1000 }) == 1000)
T.set_lower_mem_scope({ debug = true }, { physics = true })
check("scope: both listed", lowered({ min_mem_per_node = 1000, account = "physics" }) == 750)
check("scope: partition listed, account not", lowered({ min_mem_per_node = 1000, account = "chem" }) == 1000)
T.set_lower_mem_scope(nil, nil)
check("scope: none set -> every job", lowered({ min_mem_per_node = 1000, partition = "small,debug", account = "chem" }) == 600)
-- Sanity checks on the answer: a recommendation that is not whole, finite bytes, or below the
-- answer's own predicted peak (or, from the bound, below the bound) is neither applied nor told;
-- the answer stays in the comment. Before, any positive value below the request was applied (a
-- daemon answering 1 lowered every job to LOWER_MEM_MIN_MB).
for _, m in ipairs({ "rec_tiny", "rec_frac", "rec_inf", "rec_below_peak", "rec_below_upper" }) do
  set_mode(m)
  logs, user_msgs = {}, {}
  d = desc({ min_mem_per_node = 1000 })
  slurm_job_submit(d, {}, 1000)
  check("insane answer " .. m .. ": request unchanged", d.min_mem_per_node == 1000, d.min_mem_per_node)
  check("insane answer " .. m .. ": logged why", #logs == 1 and logs[1]:find("recommendation not used (", 1, true) ~= nil,
        logs[1])
  check("insane answer " .. m .. ": the user is not told it", #user_msgs == 1 and not user_msgs[1]:find("recommended", 1, true),
        user_msgs[1])
  check("insane answer " .. m .. ": the answer is in the comment", d.comment ~= nil and d.comment:find("standin", 1, true) ~= nil)
end
-- Below the bound as far as the partition's limit forces it: the hook would clamp there itself,
-- so the daemon's answer capped at that limit is taken; one below a limit the job does not have
-- is not.
set_mode("rec_limit")
logs = {}
d = desc({ min_mem_per_node = 1000, partition = "small" })
slurm_job_submit(d, { small = { name = "small", max_mem_per_node = 600 } }, 1000)
check("capped at the partition's limit, below the bound: taken", d.min_mem_per_node == 600 and
      not logs[1]:find("not used", 1, true), logs[1])
d = desc({ min_mem_per_node = 1000, partition = "big" })
slurm_job_submit(d, { big = { name = "big", max_mem_per_node = 900 } }, 1000)
check("below the bound and below no limit of the job's: not used", d.min_mem_per_node == 1000, d.min_mem_per_node)
-- A sane answer far below the request: held at LOWER_MEM_MIN_FRACTION of it (default 0.1).
check("LOWER_MEM_MIN_FRACTION defaults to 0.1", T.lower_mem_min_fraction == 0.1, T.lower_mem_min_fraction)
set_mode("rec_small")
logs = {}
d = desc({ min_mem_per_node = 10000 })
slurm_job_submit(d, {}, 1000)
check("relative floor: 5 % recommended, lowered to 10 % of the request", d.min_mem_per_node == 1000, d.min_mem_per_node)
check("relative floor: logged", logs[#logs]:find("lowered --mem 10000M -> 1000M (", 1, true) ~= nil and
      logs[#logs]:find("held at LOWER_MEM_MIN_FRACTION = 0.1 of the request", 1, true) ~= nil, logs[#logs])
d = desc({ min_mem_per_cpu = 10000, num_tasks = 4, min_cpus = 4 })
slurm_job_submit(d, {}, 1000)
check("relative floor: per CPU too", d.min_mem_per_cpu == 1000, d.min_mem_per_cpu)
T.set_lower_mem(true, nil, 0)
d = desc({ min_mem_per_node = 10000 })
slurm_job_submit(d, {}, 1000)
check("relative floor 0: the recommendation itself", d.min_mem_per_node == 500, d.min_mem_per_node)
T.set_lower_mem(true, nil, 0.1)
set_mode("ok")
-- A recommendation at or above the request (the daemon's rule allowed it): never raised.
set_mode("raise")
d = desc({ min_mem_per_node = 1000 })
slurm_job_submit(d, {}, 1000)
check("lower: a larger recommendation never raises", d.min_mem_per_node == 1000, d.min_mem_per_node)
set_mode("ok")
T.set_lower_mem(false)
d = desc({ min_mem_per_node = 1000 })
slurm_job_submit(d, {}, 1000)
check("off by default: unchanged", d.min_mem_per_node == 1000, d.min_mem_per_node)

-- The advice is in the job's own form: --mem is per node, --mem-per-cpu per CPU. The whole-job
-- recommendation (15 GiB for -N 2 --mem=10G) was shown as --mem=15.0G, twice that in all.
user_msgs = {}
d = desc({ min_mem_per_node = 10240, min_nodes = 2 })
slurm_job_submit(d, {}, 1000)
check("advice: per node for -N 2 --mem", user_msgs[1] and
      user_msgs[1]:find("recommended --mem=7680M (15.0G in all over 2 nodes)", 1, true), user_msgs[1])
user_msgs = {}
d = desc({ min_mem_per_cpu = 1000, num_tasks = 4, min_cpus = 4 })
slurm_job_submit(d, {}, 1000)
check("advice: per CPU for --mem-per-cpu", user_msgs[1] and
      user_msgs[1]:find("recommended --mem-per-cpu=750M (2.9G in all over 4 CPUs)", 1, true), user_msgs[1])
user_msgs = {}
d = desc({ mem_per_tres = "gres:gpu:4096", tres_per_job = "gres:gpu:2" })
slurm_job_submit(d, {}, 1000)
check("advice: per GPU for --mem-per-gpu", user_msgs[1] and
      user_msgs[1]:find("recommended --mem-per-gpu=3G (6.0G in all over 2 GPUs)", 1, true), user_msgs[1])
user_msgs = {}
d = desc({ mem_per_tres = "gres:gpu:4096", tres_per_job = "gres:gpu:2", partition = "percpu" })
slurm_job_submit(d, { percpu = { name = "percpu", max_mem_per_cpu = 150 } }, 1000)
check("advice: --mem-per-gpu is not clamped by a per-CPU limit", user_msgs[1] and
      user_msgs[1]:find("recommended --mem-per-gpu=3G", 1, true), user_msgs[1])
user_msgs = {}
d = desc({ min_mem_per_node = 4096 })
slurm_job_submit(d, {}, 1000)
check("advice: whole gigabytes as sbatch takes them", user_msgs[1] and
      user_msgs[1]:find("recommended --mem=3G", 1, true) and not user_msgs[1]:find(" in all", 1, true), user_msgs[1])
user_msgs = {}
d = desc({ min_mem_per_node = 1000, partition = "small" })
slurm_job_submit(d, { small = { name = "small", max_mem_per_node = 600 } }, 1000)
check("advice: never above the partition's limit", user_msgs[1] and
      user_msgs[1]:find("recommended --mem=600M", 1, true), user_msgs[1])

-- Without Content-Length the answer is read until the daemon closes, at most 1 MiB.
set_mode("noclen")
d = desc({ min_mem_per_node = 1000 })
slurm_job_submit(d, {}, 1000)
check("no Content-Length: read until closed", d.comment ~= nil and d.comment:find("standin", 1, true) ~= nil, d.comment)
set_mode("noclen_huge")
logs = {}
d = desc({ min_mem_per_node = 1000 })
slurm_job_submit(d, {}, 1000)
check("no Content-Length, 2 MiB: refused, job unchanged", d.comment == nil and d.min_mem_per_node == 1000 and
      #logs == 1 and logs[1]:find("answer larger than 1048576 bytes", 1, true) ~= nil, logs[1])
T.reset_breaker()

set_mode("keepalive")
d = desc({ min_mem_per_node = 1000 })
slurm_job_submit(d, {}, 1000)
check("answer read by Content-Length, not by close", d.comment ~= nil)
set_mode("ok")
require("socket").sleep(1.1)  -- the stand-in is busy holding that connection

T.set_timeout(PRODUCTION_TIMEOUT_S)
-- "drip": every read sees a byte within its own wait, so only a deadline enforced on each read
-- (not just between reads) gives up in time; the whole answer would have arrived after 1.2 s.
-- "num_*": an answer with NaN, Infinity or a hex number, which JSON does not have, is refused whole.
for _, m in ipairs({ "garbage", "num_nan", "num_inf", "num_hex", "500", "slow", "drip" }) do
  T.reset_breaker()
  set_mode(m)
  logs = {}
  d = desc({ min_mem_per_node = 1000 })
  local rc = slurm_job_submit(d, {}, 1000)
  check("fail open " .. m, rc == 0 and d.comment == nil and d.min_mem_per_node == 1000 and #logs == 1 and
        (not m:find("^num_") or logs[1]:find("no prediction (bad answer: ", 1, true) ~= nil), logs[1])
  if m == "slow" or m == "drip" then
    require("socket").sleep(1.3)  -- the single-threaded stand-in finishes that answer
  end
end
set_mode("ok")
T.reset_breaker()
T.set_socket(sock_path .. ".absent")
logs = {}
d = desc({ min_mem_per_node = 1000 })
check("fail open daemon down", slurm_job_submit(d, {}, 1000) == 0 and d.comment == nil and #logs == 1, logs[1])

-- Circuit breaker: 3 failures in a row open it (one line says so); while open the daemon is not
-- asked at all, even once it is back; after the back-off one submission probes and succeeds.
T.reset_breaker()
T.set_breaker(3, 0.5)
logs = {}
for _ = 1, 3 do slurm_job_submit(desc({ min_mem_per_node = 1000 }), {}, 1000) end
check("breaker opens after 3", #logs == 3 and logs[3]:find("3 failures in a row", 1, true) ~= nil, logs[3])
T.set_socket(sock_path)  -- the daemon is back, but the breaker is open
logs = {}
d = desc({ min_mem_per_node = 1000 })
slurm_job_submit(d, {}, 1000)
check("breaker open: daemon not asked", d.comment == nil and #logs == 0, logs[1])
require("socket").sleep(0.6)
d = desc({ min_mem_per_node = 1000 })
slurm_job_submit(d, {}, 1000)
check("breaker closes after the back-off", d.comment ~= nil and #logs == 1 and
      logs[1]:find("answering again (1 submission", 1, true) ~= nil, logs[1])
T.set_breaker(3, 30)

-- The catch-all: an internal error in the hook (injected into a copy of it) still accepts the
-- job unchanged and logs why.
do
  local f = io.open(hook, "r")
  local src = f:read("*a")
  f:close()
  local broken, n = src:gsub("local function predict%(d, submit_uid, part_list%)\n",
                             "local function predict(d, submit_uid, part_list)\n  error(\"injected failure\")\n", 1)
  check("error injected", n == 1)
  local env_test = PEAKCAST_TEST
  PEAKCAST_TEST = {}
  assert(loadstring(broken))()
  PEAKCAST_TEST.set_socket(sock_path)
  logs = {}
  d = desc({ min_mem_per_node = 1000 })
  local rc = slurm_job_submit(d, {}, 1000)
  check("internal error: job accepted unchanged", rc == 0 and d.comment == nil and d.min_mem_per_node == 1000 and
        #logs == 1 and logs[1]:find("hook error", 1, true) ~= nil and logs[1]:find("injected failure", 1, true) ~= nil,
        logs[1])
  PEAKCAST_TEST = env_test
  dofile(hook)  -- the real hook again
  T = PEAKCAST_TEST
end

-- Without lua-cjson, as without lua-socket: one line at load, then every job accepted unchanged,
-- the daemon (answering) not asked.
do
  local env_test, real_cjson = PEAKCAST_TEST, package.loaded.cjson
  package.loaded.cjson = nil
  package.preload.cjson = function() error("module 'cjson' not found") end
  PEAKCAST_TEST = {}
  logs = {}
  dofile(hook)
  PEAKCAST_TEST.set_socket(sock_path)
  local at_load = #logs
  d = desc({ min_mem_per_node = 1000 })
  local rc = slurm_job_submit(d, {}, 1000)
  check("no lua-cjson: one line at load", at_load == 1 and logs[1]:find("lua-cjson is not installed", 1, true) ~= nil,
        logs[1])
  check("no lua-cjson: job accepted unchanged", rc == 0 and d.comment == nil and d.min_mem_per_node == 1000 and
        #logs == 1, logs[2])
  package.preload.cjson, package.loaded.cjson = nil, real_cjson
  PEAKCAST_TEST = env_test
  dofile(hook)  -- the real hook again
  T = PEAKCAST_TEST
end

-- salloc (no script) is skipped
T.set_socket(sock_path)
d = desc()
d.script = nil  -- (desc({ script = nil }) would keep the default script)
check("no script skipped", slurm_job_submit(d, {}, 1000) == 0 and d.comment == nil)
check("modify", slurm_job_modify({}, {}, {}, 0) == 0)

print(string.format("%d passed, %d failed", passed, failed))
os.exit(failed == 0 and 0 or 1)
