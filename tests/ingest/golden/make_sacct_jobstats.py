#!/usr/bin/env python3
"""Writes sacct_jobstats.txt: a `sacct -P` listing whose AdminComment column holds jobstats
summaries built to jobstats' schema (JS1: + base64(gzip(JSON)), as its slurmctld epilog writes
them with Python's gzip and base64). Run from this folder; the output is committed, and the
expected labels in sacct_jobstats.txt.expected.jsonl were worked out by hand from the numbers
below (docs/formats.md, "jobstats")."""
import base64, gzip, json

G = 1024 ** 3

def js1(summary):
    raw = gzip.compress(json.dumps(summary).encode(), mtime=0)
    return "JS1:" + base64.b64encode(raw).decode()

two_gpus = {"gpus": 2, "total_time": 3600, "nodes": {"g001": {
    "cpus": 8, "total_time": 3500.5, "used_memory": 20 * G, "total_memory": 64 * G,
    "gpu_used_memory": {"0": 30 * G, "1": 60 * G},
    "gpu_total_memory": {"0": 80 * G, "1": 80 * G},
    "gpu_utilization": {"0": 91.5, "1": 97.0}}}}
two_nodes = {"total_time": 600, "nodes": {
    "c001": {"cpus": 4, "total_time": 500, "used_memory": 1 * G, "total_memory": 4 * G},
    "c002": {"cpus": 4, "total_time": 500, "used_memory": 2 * G, "total_memory": 4 * G}}}
nodes_list = {"nodes": [{"used_memory": 1}]}
vs_gpumem = {"gpus": 1, "nodes": {"g002": {"cpus": 4, "used_memory": 5 * G, "total_memory": 32 * G,
    "gpu_used_memory": {"3": 10 * G}, "gpu_total_memory": {"3": 40 * G}}}}
no_tres_gpu = {"gpus": 1, "nodes": {"g003": {"cpus": 2, "used_memory": 2 * G, "total_memory": 16 * G,
    "gpu_used_memory": {"0": 12 * G}, "gpu_total_memory": {"0": 24 * G}}}}

H = ("JobID|JobIDRaw|JobName|User|Account|Partition|State|Submit|Start|End|ElapsedRaw|Timelimit|"
     "NCPUS|NNodes|ReqCPUS|ReqMem|ReqTRES|AllocTRES|MaxRSS|TRESUsageInMax|TRESUsageInTot|AdminComment")
T = "2026-11-30T10:00:00|2026-11-30T10:00:10|2026-11-30T11:00:10|3600|02:00:00"
rows = [
    H,
    f"101|101|train|ana|ml|gpu|COMPLETED|{T}|8|1|8|64G|cpu=8,gres/gpu=2,mem=64G,node=1|cpu=8,gres/gpu=2,mem=64G,node=1|||"
    f"|{js1(two_gpus)}",
    f"101.batch|101|batch||||COMPLETED|{T}|8|1|8||||16G|mem=16G|mem=16G|",
    f"102|102|mpi|ben|phys|cpu|COMPLETED|{T}|8|2|8|8G|cpu=8,mem=8G,node=2|cpu=8,mem=8G,node=2||||{js1(two_nodes)}",
    f"103|103|quick|ben|phys|cpu|COMPLETED|{T}|1|1|1|1G|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|100M|||JS1:Short",
    f"104|104|quiet|ben|phys|cpu|COMPLETED|{T}|1|1|1|1G|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|200M|||JS1:None",
    f"105|105|bad64|cy|phys|cpu|COMPLETED|{T}|1|1|1|1G|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|300M|||JS1:not*base64",
    f"106|106|badjson|cy|phys|cpu|COMPLETED|{T}|1|1|1|1G|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|400M|||{js1(nodes_list)}",
    f"107|107|note|cy|phys|cpu|COMPLETED|{T}|1|1|1|1G|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|500M|||node rebooted | see ticket 42",
    f"108|108|both|dee|ml|gpu|COMPLETED|{T}|4|1|4|32G|cpu=4,gres/gpu:a100_80g=1,mem=32G,node=1|cpu=4,gres/gpu:a100_80g=1,mem=32G,node=1|4G"
    f"|gres/gpumem=30G,mem=4G|gres/gpumem=30G,mem=4G|{js1(vs_gpumem)}",
    f"109|109|nogres|dee|ml|gpu|COMPLETED|{T}|2|1|2|16G|cpu=2,mem=16G,node=1|cpu=2,mem=16G,node=1|1G|||{js1(no_tres_gpu)}",
]
with open("sacct_jobstats.txt", "w") as f:
    f.write("\n".join(rows) + "\n")
