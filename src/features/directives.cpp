// Scheduler directives (#SBATCH, #PBS, #BSUB, #$, #PJM, #FLUX:, #COBALT) into typed tokens:
// "sbatch:--mem" plus "sbatch:--mem=bin:32" (log2 of bytes), "sbatch:--time=hbin:3" (log2 hours),
// "sbatch:--gres:gpu=gpus:2", "pbs:-l:ncpus=bin:3", ...
#include <array>
#include <string>

#include "features/tokenizer_internal.h"

namespace peakcast::features::detail {
namespace {

struct Scheduler {
  std::string_view prefix;
  std::string_view tag;
  double mem_unit;      // bytes per bare number in memory requests
  double time_unit_s;   // seconds per bare number in time requests
  bool two_field_hh_mm; // "12:30" means HH:MM (else MM:SS)
};

constexpr double kMiB = 1024.0 * 1024.0;
// Bare units follow each scheduler's documented default (Slurm MB and minutes; PBS and Grid
// Engine bytes and seconds; LSF minutes and, at most sites, MB; PJM seconds; Flux and Cobalt
// minutes).
constexpr std::array<Scheduler, 7> kSchedulers = {{
    {"#SBATCH", "sbatch", kMiB, 60, false},
    {"#PBS", "pbs", 1, 1, false},
    {"#BSUB", "bsub", kMiB, 60, true},
    {"#$", "uge", 1, 1, false},
    {"#PJM", "pjm", kMiB, 1, false},
    {"#FLUX:", "flux", 1, 60, false},
    {"#COBALT", "cobalt", 1, 60, true},
}};

bool one_of(std::string_view s, std::initializer_list<std::string_view> set) {
  for (auto x : set) {
    if (s == x) return true;
  }
  return false;
}

// Keys are option names ("--mem", "-M") or resource-list keys ("h_vmem", "walltime").
bool is_mem_key(const Scheduler& s, std::string_view k) {
  if (s.tag == "bsub" && k == "-M") return true;
  return one_of(k, {"--mem", "--mem-per-cpu", "--mem-per-gpu", "mem", "vmem", "pmem", "pvmem",
                    "h_vmem", "s_vmem", "mem_free", "h_rss", "s_rss", "virtual_free",
                    "m_mem_free", "mem_req", "rss", "node-mem", "proc-mem", "mem-per-core"});
}

bool is_time_key(const Scheduler& s, std::string_view k) {
  if ((s.tag == "bsub" && k == "-W") || ((s.tag == "flux" || s.tag == "cobalt") && k == "-t")) {
    return true;
  }
  return one_of(k, {"--time", "--time-min", "--time-limit", "walltime", "cput", "pcput", "h_rt",
                    "s_rt", "h_cpu", "s_cpu", "elapse"});
}

bool is_gpu_key(const Scheduler& s, std::string_view k) {
  if (s.tag == "flux" && k == "-g") return true;
  return one_of(k, {"--gpus", "--gpus-per-node", "--gpus-per-task", "--gpus-per-socket", "ngpus",
                    "gpus", "gpu", "num", "gpus-per-node", "gpus-per-task"});
}

bool is_list_option(const Scheduler& s, std::string_view opt) {
  if (s.tag == "pbs" || s.tag == "uge") return opt == "-l" || opt == "-v";
  if (s.tag == "pjm") return one_of(opt, {"-L", "--rsc-list", "--mpi", "--llio", "-x"});
  if (s.tag == "bsub") return opt == "-gpu";
  if (s.tag == "flux") return one_of(opt, {"-S", "--setattr", "-o", "--setopt"});
  if (s.tag == "cobalt") return opt == "--attrs";
  return one_of(opt, {"--export", "--constraint"});
}

bool is_gres_option(const Scheduler& s, std::string_view opt) {
  return s.tag == "sbatch" &&
         one_of(opt, {"--gres", "--gpus", "--gpus-per-node", "--gpus-per-task", "--tres-per-node",
                      "--gpus-per-socket"});
}

// Slurm's one-letter options, spelled long so "-t 60" and "--time=60" give the same tokens.
std::string_view slurm_long_name(char c) {
  switch (c) {
    case 'A': return "--account";
    case 'a': return "--array";
    case 'B': return "--extra-node-info";
    case 'b': return "--begin";
    case 'C': return "--constraint";
    case 'c': return "--cpus-per-task";
    case 'D': return "--chdir";
    case 'd': return "--dependency";
    case 'e': return "--error";
    case 'F': return "--nodefile";
    case 'G': return "--gpus";
    case 'i': return "--input";
    case 'J': return "--job-name";
    case 'L': return "--licenses";
    case 'M': return "--clusters";
    case 'm': return "--distribution";
    case 'N': return "--nodes";
    case 'n': return "--ntasks";
    case 'o': return "--output";
    case 'p': return "--partition";
    case 'q': return "--qos";
    case 'S': return "--core-spec";
    case 't': return "--time";
    case 'w': return "--nodelist";
    case 'x': return "--exclude";
    default: return {};
  }
}

bool is_option_word(const Word& w) {
  return !w.is_op && w.text.size() > 1 && w.text[0] == '-' && !parse_number(w.text);
}

// The typed value for `key`, without the leading '='; empty when the value is a path (the
// caller emits its pieces instead).
std::string typed_value(const Scheduler& s, std::string_view key, std::string_view v) {
  if (v.empty()) return "empty";
  if (is_mem_key(s, key)) {
    if (auto b = parse_size_bytes(v, s.mem_unit)) return "bin:" + log2_bin(*b);
  }
  if (is_time_key(s, key)) {
    if (auto t = parse_duration_s(v, s.time_unit_s, s.two_field_hh_mm)) return hours_bin(*t);
  }
  if (auto n = parse_number(v)) {
    if (is_gpu_key(s, key) && *n >= 0 && *n <= 64 && *n == static_cast<int>(*n)) {
      return "gpus:" + std::to_string(static_cast<int>(*n));
    }
    return "bin:" + log2_bin(*n);
  }
  if (auto b = parse_size_bytes(v, 1)) return "size:bin:" + log2_bin(*b);
  if (v.find('/') != std::string_view::npos || v.find('%') != std::string_view::npos) return {};
  return text_value(v);
}

class DirectiveParser {
 public:
  DirectiveParser(const Scheduler& s, TokenSink& sink) : s_(s), sink_(sink) {}

  void run(const std::vector<Word>& words) {
    size_t i = 0;
    while (i < words.size()) {
      const Word& w = words[i];
      if (w.is_op) {
        ++i;
        continue;
      }
      if (!is_option_word(w)) {  // a stray positional: still typed
        if (!w.text.empty()) emit_value(std::string(s_.tag) + ":arg", "arg", w.text);
        ++i;
        continue;
      }
      std::string name = w.text;
      std::vector<std::string> values;
      if (name.rfind("--", 0) == 0) {
        if (auto eq = name.find('='); eq != std::string::npos) {
          values.push_back(name.substr(eq + 1));
          name.resize(eq);
        }
        name = ascii_lower(name);
      } else if (s_.tag == "sbatch" && name.size() >= 2) {
        std::string_view lng = slurm_long_name(name[1]);
        if (!lng.empty()) {
          if (name.size() > 2) values.push_back(name.substr(name[2] == '=' ? 3 : 2));  // "-N2"
          name = std::string(lng);
        }
      }
      ++i;
      if (values.empty()) {
        while (i < words.size() && !words[i].is_op && !is_option_word(words[i])) {
          values.push_back(words[i].text);
          ++i;
        }
      }
      emit_option(name, values);
    }
  }

 private:
  std::string base(std::string_view name) const { return std::string(s_.tag) + ":" + std::string(name); }

  void emit_option(const std::string& name, const std::vector<std::string>& values) {
    std::string b = base(name);
    sink_.add(b);
    for (const auto& v : values) {
      if (is_gres_option(s_, name)) {
        emit_gres(b, name, v);
      } else if (is_list_option(s_, name)) {
        emit_list(b, v);
      } else if (s_.tag == "bsub" && name == "-R") {
        emit_bsub_resources(b, v);
      } else {
        emit_value(b, name, v);
      }
    }
  }

  void emit_value(const std::string& b, std::string_view key, std::string_view v) {
    if (v.find_first_of(" \t") != std::string_view::npos) {  // "gpudefault smt1"
      for (auto part : split_any(v, " \t")) emit_value(b, key, part);
      return;
    }
    std::string t = typed_value(s_, key, v);
    if (t.empty()) {
      emit_word_pieces(v, sink_);
    } else {
      sink_.add(b + "=" + t);
    }
  }

  // "gpu:a100:2,shard:1" or, for --gpus, "a100:2" / "4".
  void emit_gres(const std::string& b, std::string_view opt, std::string_view v) {
    bool named = opt == "--gres" || opt == "--tres-per-node";
    for (std::string_view item : split(v, ',')) {
      auto parts = split(item, ':');
      if (parts.empty()) continue;
      std::string_view count;
      if (parts.size() > (named ? 1u : 0u) && parse_number(strip_paren(parts.back()))) {
        count = strip_paren(parts.back());
        parts.pop_back();
      }
      std::string res = named && !parts.empty() ? ascii_lower(parts.front()) : "gpu";
      if (named && !parts.empty()) parts.erase(parts.begin());
      std::string key_tok = named ? b + ":" + res : b;
      if (named) sink_.add(key_tok);
      for (auto type : parts) sink_.add(key_tok + ":" + text_value(type));
      if (!count.empty()) {
        sink_.add(key_tok + "=" + typed_value(s_, res == "gpu" ? "gpus" : "count", count));
      }
    }
  }

  // "nodes=2:ppn=4,walltime=1:00:00" / "rscunit=rscunit_ft01,rscgrp=small" / "num=4:mode=shared".
  void emit_list(const std::string& b, std::string_view v) {
    for (std::string_view piece : split_any(v, ", \t")) {
      auto eq = piece.find('=');
      if (eq != std::string_view::npos && is_time_key(s_, ascii_lower(piece.substr(0, eq)))) {
        emit_item(b, piece);
        continue;
      }
      for (std::string_view item : split(piece, ':')) emit_item(b, item);
    }
  }

  void emit_item(const std::string& b, std::string_view item) {
    if (item.empty()) return;
    auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      if (item.find('/') != std::string_view::npos) return;  // paths, base64 cache keys
      if (auto n = parse_number(item)) {
        sink_.add(b + "=bin:" + log2_bin(*n));
      } else {
        sink_.add(b + ":" + text_value(item));
      }
      return;
    }
    std::string key = ascii_lower(item.substr(0, eq));
    if (!is_list_key(key)) return;  // "/base64==" cache keys and other non-names
    std::string kt = b + ":" + key;
    sink_.add(kt);
    std::string t = typed_value(s_, key, item.substr(eq + 1));
    if (!t.empty()) sink_.add(kt + "=" + t);
  }

  // LSF resource strings: "rusage[mem=4000] span[ptile=4] select[ngpus>0]".
  void emit_bsub_resources(const std::string& b, std::string_view v) {
    size_t i = 0;
    while (i < v.size()) {
      size_t open = v.find('[', i);
      if (open == std::string_view::npos) {
        for (auto w : split_any(v.substr(i), " \t")) emit_item(b, w);
        return;
      }
      size_t close = v.find(']', open);
      if (close == std::string_view::npos) close = v.size();
      std::string_view name = trim(v.substr(i, open - i));
      std::string sect = b + ":" + text_value(name);
      sink_.add(sect);
      for (auto item : split_any(v.substr(open + 1, close - open - 1), ",: \t&|()")) {
        // select[ngpus>0] style comparisons keep the key only.
        size_t cmp = item.find_first_of("<>!");
        emit_item(sect, cmp == std::string_view::npos ? item : item.substr(0, cmp));
      }
      i = close + 1;
    }
  }

  static bool is_list_key(std::string_view k) {
    if (k.empty()) return false;
    for (char c : k) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
      if (!ok) return false;
    }
    return true;
  }
  static std::string_view strip_paren(std::string_view s) {  // "2(S:0)" -> "2"
    auto p = s.find('(');
    return p == std::string_view::npos ? s : s.substr(0, p);
  }
  static std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  }
  static std::vector<std::string_view> split(std::string_view s, char sep) {
    return split_any(s, std::string_view(&sep, 1));
  }
  static std::vector<std::string_view> split_any(std::string_view s, std::string_view seps) {
    std::vector<std::string_view> out;
    size_t start = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
      if (i == s.size() || seps.find(s[i]) != std::string_view::npos) {
        if (i > start) out.push_back(s.substr(start, i - start));
        start = i + 1;
      }
    }
    return out;
  }

  const Scheduler& s_;
  TokenSink& sink_;
};

const Scheduler* match_scheduler(std::string_view line, std::string_view* rest) {
  for (const auto& s : kSchedulers) {
    if (line.size() < s.prefix.size()) continue;
    std::string_view head = line.substr(0, s.prefix.size());
    bool match = s.tag == "flux" ? ascii_lower(head) == "#flux:" : head == s.prefix;
    if (!match) continue;
    std::string_view r = line.substr(s.prefix.size());
    // sbatch takes "#SBATCH--mem=4G" too: it reads options from right after the prefix.
    const bool glued_option = s.tag == "sbatch" && !r.empty() && r.front() == '-';
    if (s.tag != "flux" && !r.empty() && r.front() != ' ' && r.front() != '\t' && !glued_option) continue;
    *rest = r;
    return &s;
  }
  return nullptr;
}

}  // namespace

bool tokenize_directive(std::string_view line, TokenSink& sink) {
  std::string_view rest;
  const Scheduler* s = match_scheduler(line, &rest);
  if (s == nullptr) return false;
  DirectiveParser(*s, sink).run(lex_shell_line(rest));
  return true;
}

}  // namespace peakcast::features::detail
