// What the redaction rules share (redact_internal.h): the PCRE2 wrapper, values as the shell
// writes them, secret names and harmless values.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

#include "ingest/redact_internal.h"
#include "peakcast/core/io.h"

namespace peakcast::ingest::redact_detail {

// ---------------------------------------------------------------- PCRE2 wrapper

Pattern::Pattern(const char* regex, uint32_t options) {
  int err = 0;
  PCRE2_SIZE where = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex), PCRE2_ZERO_TERMINATED, options, &err,
                        &where, nullptr);
  if (code_ == nullptr) {
    std::array<PCRE2_UCHAR, 256> buf{};
    pcre2_get_error_message(err, buf.data(), buf.size());
    throw std::logic_error("redact: bad pattern at " + std::to_string(where) + ": " +
                           reinterpret_cast<const char*>(buf.data()));
  }
  pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // failure is fine: the interpreter is used
}

namespace {

// Per thread: a JIT stack larger than PCRE2's 32 KiB default, in a match context. The patterns
// are written so that no match needs much of it (no repeated group runs unbounded); a match that
// still runs out falls back to the interpreter, whose frames live on the heap (PCRE2's 20 MB heap
// limit), so a script never fails redaction for the JIT's stack.
pcre2_match_context* match_context() {
  struct Context {
    pcre2_match_context* context = pcre2_match_context_create(nullptr);
    pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
    Context() {
      if (context != nullptr && stack != nullptr) pcre2_jit_stack_assign(context, nullptr, stack);
    }
    ~Context() {
      pcre2_jit_stack_free(stack);
      pcre2_match_context_free(context);
    }
  };
  thread_local Context c;
  return c.context;
}

}  // namespace

int match(const Pattern& p, std::string_view s, size_t offset, uint32_t options, pcre2_match_data* md) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  int rc = pcre2_match(p.get(), subject, s.size(), offset, options, md, match_context());
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
    rc = pcre2_match(p.get(), subject, s.size(), offset, options | PCRE2_NO_JIT, md, match_context());
  return rc;
}

// ---------------------------------------------------------------- values

namespace {

bool space_byte(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

}  // namespace

std::optional<size_t> bare_word_end(std::string_view s, size_t pos, std::string_view stop) {
  if (pos >= s.size()) return std::nullopt;
  const char first = s[pos];
  if (space_byte(first) || stop.find(first) != std::string_view::npos || first == '=' || first == ':')
    return std::nullopt;
  // A placeholder an earlier rule left inside the word (/home/<USER>/x) is part of it, so that a
  // second pass reads the value the first one did (redaction stays idempotent).
  static constexpr std::array<std::string_view, 5> kPlaceholders = {"<USER>", "<GROUP>", "<SECRET>",
                                                                   "<TOKEN>", "<EMAIL>"};
  size_t i = pos + 1;
  while (i < s.size() && !space_byte(s[i])) {
    if (s[i] == '<') {
      const auto* ph = std::find_if(kPlaceholders.begin(), kPlaceholders.end(),
                                    [&](std::string_view p) { return s.substr(i).starts_with(p); });
      if (ph == kPlaceholders.end()) break;
      i += ph->size();
      continue;
    }
    if (stop.find(s[i]) != std::string_view::npos) break;
    ++i;
  }
  return i;
}

std::optional<Value> read_value(std::string_view s, size_t pos, std::string_view stop) {
  if (pos >= s.size()) return std::nullopt;
  size_t open = 0;
  if (s[pos] == '"' || s[pos] == '\'') {
    open = 1;
  } else if (s[pos] == '$' && pos + 1 < s.size() && (s[pos + 1] == '\'' || s[pos + 1] == '"')) {
    open = 2;
  }
  Value v;
  if (open == 0) {
    const std::optional<size_t> end = bare_word_end(s, pos, stop);
    if (!end) return std::nullopt;
    v.end = *end;
    v.literal = s.substr(pos, *end - pos);
    return v;
  }
  const char quote = s[pos + open - 1];
  size_t i = pos + open;
  for (; i < s.size() && s[i] != '\n' && s[i] != quote; ++i) {
    if ((open == 2 || quote == '"') && s[i] == '\\' && i + 1 < s.size() && s[i + 1] != '\n') ++i;
  }
  v.open = s.substr(pos, open);
  v.literal = s.substr(pos + open, i - (pos + open));
  if (i < s.size() && s[i] == quote) {
    v.close = s.substr(i, 1);
    ++i;
  }
  v.end = i;
  return v;
}

size_t shell_word_end(std::string_view s, size_t start, size_t end) {
  size_t i = end, backslashes = 0;
  while (backslashes < end - start && s[end - 1 - backslashes] == '\\') ++backslashes;
  if (backslashes % 2 == 1) {  // the bare part stopped at an escaped byte
    if (i >= s.size() || s[i] == '\n') return end;
    ++i;
  }
  static constexpr std::string_view kStop = ";&|()<>`,]";
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\\') {
      if (i + 1 >= s.size() || s[i + 1] == '\n') break;
      i += 2;
    } else if (c == '"' || c == '\'') {
      if (i + 1 < s.size() && (s[i + 1] == ' ' || s[i + 1] == '\t')) break;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '\n' && s[j] != c; ++j) {
        if (c == '"' && s[j] == '\\' && j + 1 < s.size() && s[j + 1] != '\n') ++j;
      }
      if (j >= s.size() || s[j] != c) break;
      i = j + 1;
    } else if (space_byte(c) || kStop.find(c) != std::string_view::npos) {
      break;
    } else {
      ++i;
    }
  }
  return i;
}

// ---------------------------------------------------------------- secret names, harmless values

namespace {

// Splits a variable or flag name into lower-case words at non-alphanumerics and camelCase humps.
std::vector<std::string> name_words(std::string_view name) {
  std::vector<std::string> words;
  std::string cur;
  for (size_t i = 0; i < name.size(); ++i) {
    auto c = static_cast<unsigned char>(name[i]);
    if (!std::isalnum(c)) {
      if (!cur.empty()) words.push_back(std::move(cur)), cur.clear();
      continue;
    }
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])) &&
        !cur.empty()) {
      words.push_back(std::move(cur)), cur.clear();
    }
    cur.push_back(static_cast<char>(std::tolower(c)));
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

}  // namespace

bool secret_name(std::string_view name) {
  static const std::array<std::string_view, 14> kWords = {
      "token",       "secret",    "secrets",   "password",   "passwd",    "passphrase", "credential",
      "credentials", "apikey",    "accesskey", "secretkey",  "privatekey", "authtoken", "sshpass"};
  auto words = name_words(name);
  for (const auto& w : words) {
    for (auto k : kWords) {
      if (w == k) return true;
    }
    // Glued prefixes: PGPASSWORD, DBPASSWD.
    if (w.ends_with("password") || w.ends_with("passwd")) return true;
  }
  // DB_PASS, SMTP_PASS, PASS (not BYPASS: one word).
  for (const auto& w : words) {
    if (w == "pass") return true;
  }
  // *_KEY, api-key, AccessKey; MYSQL_PWD, DB_PWD, DB_PW (PWD alone is the working directory).
  return words.size() >= 2 && (words.back() == "key" || words.back() == "pwd" || words.back() == "pw");
}

size_t reference_length(std::string_view v) {
  if (v.size() < 2 || v[0] != '$') return 0;
  const char c = v[1];
  if (c == '{' || c == '(') {
    const char close = c == '{' ? '}' : ')';
    int depth = 0;
    for (size_t i = 1; i < v.size(); ++i) {
      if (v[i] == c) ++depth;
      if (v[i] == close && --depth == 0) return i + 1;
    }
    return 0;
  }
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
    size_t i = 2;
    while (i < v.size() && (std::isalnum(static_cast<unsigned char>(v[i])) || v[i] == '_')) ++i;
    return i;
  }
  const bool special = std::isdigit(static_cast<unsigned char>(c)) || std::string_view("@*#?$!-").find(c) != std::string_view::npos;
  return special ? 2 : 0;
}

bool literal_after_references(std::string_view t) {
  size_t i = 0, last = 0;
  for (size_t n; i < t.size() && (n = reference_length(t.substr(i))) > 0;) last = i, i += n;
  if (i > 0 && t[last + 1] == '(') return false;
  if (i > 0 && t[last + 1] == '{') {
    size_t k = last + 2;
    while (k < i && (std::isalnum(static_cast<unsigned char>(t[k])) || t[k] == '_')) ++k;
    if (k != i - 1) return false;  // not `${NAME}`
  }
  const std::string_view rest = t.substr(i);
  return !rest.empty() && std::isalnum(static_cast<unsigned char>(rest[0])) && !harmless_value(rest);
}

namespace {

bool harmless_reference(std::string_view v) {
  // `$` alone, or a `${`/`$(` not closed in the value: as before
  return reference_length(v) == 0 || !literal_after_references(v);
}

}  // namespace

bool harmless_value(std::string_view v) {
  if (v.empty() || v[0] == '<') return true;
  if (v[0] == '$') return !(v.size() > 1 && (v[1] == '\'' || v[1] == '"')) && harmless_reference(v);
  static const std::array<std::string_view, 8> kLiterals = {"true", "false", "yes", "no",
                                                            "none", "null",  "on",  "off"};
  std::string lv = lower(v);
  for (auto k : kLiterals) {
    if (lv == k) return true;
  }
  if (v.size() < 10) {
    bool number = true, digit = false;
    for (char c : v) {
      if (std::isdigit(static_cast<unsigned char>(c))) {
        digit = true;
      } else if (c != '.' && c != 'e' && c != 'E' && c != '-' && c != '+') {
        number = false;
      }
    }
    bool has_dot_or_exp = v.find_first_of(".eE") != std::string_view::npos;
    if (number && digit && (has_dot_or_exp || v.size() < 6)) return true;
  }
  return false;
}

}  // namespace peakcast::ingest::redact_detail
