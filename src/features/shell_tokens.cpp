// Ordinary shell lines into tokens: cmd:NAME for the first word of each pipeline stage, flags,
// flag=bin:N and num:bin:N for numbers, kv:KEY(=value), env:NAME for assignments, module:NAME,
// var:NAME for references, path:/w: pieces, op:| and friends.
#include "features/tokenizer_internal.h"

namespace peakcast::features::detail {
namespace {

bool one_of(std::string_view s, std::initializer_list<std::string_view> set) {
  for (auto x : set) {
    if (s == x) return true;
  }
  return false;
}

// Words that start a stage without being its command.
bool is_prefix_keyword(std::string_view w) {
  return one_of(w, {"do", "then", "else", "elif", "if", "while", "until", "!", "{", "}", "time",
                    "exec", "nohup", "command", "builtin", "done", "fi", "esac", "[[", "]]"});
}

// Launchers whose first plain argument is the real program ("srun -n 4 python train.py").
bool is_launcher(std::string_view cmd) {
  return one_of(cmd, {"srun", "mpirun", "mpiexec", "mpiexec.hydra", "jsrun", "aprun", "ibrun",
                      "charmrun", "numactl", "taskset", "flux", "xargs", "parallel", "timeout",
                      "env", "stdbuf", "nice", "orterun"});
}

bool is_redirect(std::string_view op) {
  return one_of(op, {">", ">>", "<", "<<", "<<<", "&>", ">&"});
}

bool is_flag(std::string_view w) {
  return w.size() > 1 && w[0] == '-' && !parse_number(w) && w != "--";
}

std::string basename_of(std::string_view w) {
  auto slash = w.find_last_of('/');
  if (slash != std::string_view::npos) w = w.substr(slash + 1);
  return std::string(w);
}

class StageTokenizer {
 public:
  explicit StageTokenizer(TokenSink& sink) : sink_(sink) {}

  void line(const std::vector<Word>& words, bool nested) {
    for (const Word& w : words) {
      if (w.is_op) {
        op(w.text);
      } else if (redirect_target_) {
        redirect_target_ = false;
        emit_var_refs(w.text, sink_);
        emit_word_pieces(w.text, sink_);
      } else if (stage_start_ && !nested) {
        stage_word(w);
      } else {
        arg(w, nested);
      }
    }
  }

 private:
  void op(const std::string& o) {
    prev_flag_.clear();
    if (is_redirect(o)) {
      sink_.add("op:", o == ">>" ? ">" : o);
      redirect_target_ = o != ">&";  // "2>&1" has no path after it
      return;
    }
    if (o == "|" || o == "||" || o == "&&" || o == "&") sink_.add("op:", o);
    if (o == ")") {
      stage_start_ = false;
      return;
    }
    stage_start_ = true;
    cmd_.clear();
    module_mode_ = ModuleMode::kNone;
  }

  void stage_word(const Word& w) {
    std::string_view t = w.text;
    auto eq = t.find('=');
    // NAME=value is an assignment when the '=' itself is not quoted: x="a b" is, "x=1" is not.
    if (eq != std::string_view::npos && eq < w.quote_start && is_identifier(t.substr(0, eq))) {
      assignment(t.substr(0, eq), t.substr(eq + 1));
      return;
    }
    if (is_prefix_keyword(t)) {
      sink_.add("kw:", t);
      return;
    }
    if (is_flag(t)) {  // "time -p cmd": a keyword's flag, the command is still to come
      sink_.add(std::string(t));
      return;
    }
    start_command(t);
  }

  void start_command(std::string_view t) {
    cmd_ = basename_of(t);
    if (cmd_.empty()) cmd_ = std::string(t);
    sink_.add("cmd:", cmd_);
    emit_var_refs(t, sink_);
    stage_start_ = false;
    launcher_ = is_launcher(cmd_);
    module_mode_ = cmd_ == "module" ? ModuleMode::kSubcommand
                   : cmd_ == "ml"   ? ModuleMode::kNames
                                    : ModuleMode::kNone;
    if (cmd_ == "export" || cmd_ == "declare" || cmd_ == "local" || cmd_ == "readonly") {
      exporting_ = true;
    } else {
      exporting_ = false;
    }
  }

  void assignment(std::string_view name, std::string_view value) {
    sink_.add("env:", name);
    if (auto n = parse_number(value)) {
      sink_.add("env:" + std::string(name) + "=bin:" + log2_bin(*n));
    } else if (auto b = parse_size_bytes(value, 1); b && !value.empty() && value.back() > '9') {
      sink_.add("env:" + std::string(name) + "=size:bin:" + log2_bin(*b));
    } else if (!value.empty()) {
      emit_var_refs(value, sink_);
      if (value.find_first_of("/.$ \t") == std::string_view::npos) {
        sink_.add("env:" + std::string(name) + "=" + text_value(value));
      } else {
        emit_word_pieces(value, sink_);
      }
    }
  }

  void arg(const Word& w, bool nested) {
    const std::string& t = w.text;
    // A quoted argument with spaces ("bash -c '...'", "--wrap=..."): its words are arguments too.
    if (w.quoted && !nested && t.find(' ') != std::string::npos) {
      StageTokenizer inner(sink_);
      inner.stage_start_ = false;
      inner.line(lex_shell_line(t), true);
      prev_flag_.clear();
      return;
    }
    if (module_mode_ != ModuleMode::kNone && !is_flag(t)) {
      module_word(t);
      return;
    }
    if (exporting_) {
      auto eq = t.find('=');
      if (eq != std::string::npos && is_identifier(std::string_view(t).substr(0, eq))) {
        assignment(std::string_view(t).substr(0, eq), std::string_view(t).substr(eq + 1));
        return;
      }
    }
    if (is_flag(t)) {
      flag(t);
      return;
    }
    if (auto n = parse_number(t)) {
      std::string bin = "bin:" + log2_bin(*n);
      if (!prev_flag_.empty()) sink_.add(prev_flag_ + "=" + bin);
      sink_.add("num:" + bin);
      prev_flag_.clear();
      return;
    }
    if (auto b = parse_size_bytes(t, 1); b && t.back() > '9') {
      std::string bin = "size:bin:" + log2_bin(*b);
      if (!prev_flag_.empty()) sink_.add(prev_flag_ + "=" + bin);
      sink_.add(bin);
      prev_flag_.clear();
      return;
    }
    auto eq = t.find('=');
    if (eq != std::string::npos && eq > 0 && is_identifier(std::string_view(t).substr(0, eq))) {
      key_value(std::string_view(t).substr(0, eq), std::string_view(t).substr(eq + 1));
      prev_flag_.clear();
      return;
    }
    bool plain = t.find_first_of("/$.") == std::string::npos;
    // A launcher's first plain argument that is not a flag's value is the program it runs.
    if (launcher_ && !nested && (prev_flag_.empty() || prev_flag_.rfind("--", 0) == 0) &&
        t.find('$') == std::string::npos && t.find('=') == std::string::npos) {
      launcher_ = false;
      prev_flag_.clear();
      start_command(t);
      return;
    }
    if (!prev_flag_.empty() && prev_flag_.rfind("--", 0) == 0 && plain) {
      sink_.add(prev_flag_ + "=" + text_value(t));
    }
    prev_flag_.clear();
    emit_var_refs(t, sink_);
    emit_word_pieces(t, sink_);
  }

  void flag(std::string_view t) {
    auto eq = t.find('=');
    if (eq == std::string_view::npos) {
      prev_flag_ = std::string(t);
      sink_.add(prev_flag_);
      return;
    }
    std::string name(t.substr(0, eq));
    std::string_view v = t.substr(eq + 1);
    prev_flag_.clear();
    sink_.add(name);
    if (auto n = parse_number(v)) {
      std::string bin = "bin:" + log2_bin(*n);
      sink_.add(name + "=" + bin);
      sink_.add("num:" + bin);
    } else if (auto b = parse_size_bytes(v, 1); b && !v.empty() && v.back() > '9') {
      sink_.add(name + "=size:bin:" + log2_bin(*b));
    } else if (!v.empty() && v.find_first_of("/$.") == std::string_view::npos) {
      sink_.add(name + "=" + text_value(v));
    } else {
      emit_var_refs(v, sink_);
      emit_word_pieces(v, sink_);
    }
  }

  void key_value(std::string_view key, std::string_view v) {
    std::string k = "kv:" + std::string(key);
    sink_.add(k);
    if (auto n = parse_number(v)) {
      sink_.add(k + "=bin:" + log2_bin(*n));
    } else if (!v.empty() && v.find_first_of("/$.") == std::string_view::npos) {
      sink_.add(k + "=" + text_value(v));
    } else {
      emit_var_refs(v, sink_);
      emit_word_pieces(v, sink_);
    }
  }

  // "module load gcc/12.2 cuda/11.8" -> module:gcc module:cuda (the version kept as its own
  // token too, so a major version change is visible).
  void module_word(std::string_view t) {
    if (module_mode_ == ModuleMode::kSubcommand) {
      std::string sub = ascii_lower(t);
      sink_.add("module:" + sub + "!");
      bool loads = one_of(sub, {"load", "add", "try-load", "swap", "switch", "sw"});
      module_mode_ = loads ? ModuleMode::kNames : ModuleMode::kOther;
      return;
    }
    if (module_mode_ == ModuleMode::kOther) {
      emit_var_refs(t, sink_);
      emit_word_pieces(t, sink_);
      return;
    }
    if (t.empty() || t[0] == '$') {
      emit_var_refs(t, sink_);
      return;
    }
    auto slash = t.find('/');
    sink_.add("module:", ascii_lower(t.substr(0, slash)));
    if (slash != std::string_view::npos) sink_.add("module:", ascii_lower(t));
  }

  enum class ModuleMode { kNone, kSubcommand, kNames, kOther };

  TokenSink& sink_;
  bool stage_start_ = true;
  bool redirect_target_ = false;
  bool launcher_ = false;
  bool exporting_ = false;
  ModuleMode module_mode_ = ModuleMode::kNone;
  std::string cmd_;
  std::string prev_flag_;
};

}  // namespace

void tokenize_shell_line(std::string_view line, TokenSink& sink) {
  StageTokenizer(sink).line(lex_shell_line(line), false);
}

}  // namespace peakcast::features::detail
