// Internals of the script tokenizer, shared by its .cpp files (not part of the public contract).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace peakcast::features::detail {

inline constexpr size_t kMaxTokenChars = 64;   // longer tokens are cut (base64 blobs, long paths)
inline constexpr size_t kMaxTextValueChars = 32;

// Appends tokens, cutting each to kMaxTokenChars so one pathological word cannot dominate.
class TokenSink {
 public:
  explicit TokenSink(std::vector<std::string>& out) : out_(out) {}
  void add(std::string token);
  void add(std::string_view prefix, std::string_view body) {
    std::string t(prefix);
    t.append(body);
    add(std::move(t));
  }

 private:
  std::vector<std::string>& out_;
};

// ---- shell lexing ----
struct Word {
  std::string text;
  bool quoted = false;  // some part was inside quotes
  size_t quote_start = std::string::npos;  // offset in text where the first quoted part begins
  bool is_op = false;   // an operator: | || & && ; ;; ( ) $( ` > >> < << <<< 2> &> >&
};

// Splits a script into logical lines: CRLF normalized, backslash-newline continuations joined by
// removing the pair, as sh does (not when the backslash is itself escaped: "\\" at the end of a line is a literal backslash, and
// not inside a comment, a '#' that starts a word outside quotes, whether the whole line or after a
// command: bash ends a comment, and sbatch an #SBATCH line, at its newline). A backslash-newline in
// single quotes is joined too: the quote is open, so the command goes on. A newline inside open
// quotes without a backslash ends the line all the same.
std::vector<std::string> logical_lines(std::string_view script);

// One logical line into words and operators; quotes removed, backslash escapes resolved, a '#'
// at the start of a word begins a comment that runs to the end of the line. Never throws on
// unbalanced quotes: an open quote runs to the end of the line.
std::vector<Word> lex_shell_line(std::string_view line);

// ---- values ----
std::string ascii_lower(std::string_view s);
bool is_identifier(std::string_view s);         // [A-Za-z_][A-Za-z0-9_]*
std::optional<double> parse_number(std::string_view s);  // 64, -3, 0.05, 1e-4 (no units)
std::optional<double> parse_size_bytes(std::string_view s, double bare_unit);  // 4G, 512Mi, 2gb
// floor(log2|x|) as text, "zero" for 0, "neg" prefix for negatives; clamped to [-64, 64].
std::string log2_bin(double x);
// Seconds from scheduler time notations: [D-]HH:MM:SS, MM:SS (or HH:MM when hh_mm), bare number
// times bare_unit_s, or a Flux-style suffix (30s, 10m, 2h, 1d).
std::optional<double> parse_duration_s(std::string_view s, double bare_unit_s, bool hh_mm = false);
// "=hbin:N": floor(log2 hours).
std::string hours_bin(double seconds);
std::string text_value(std::string_view v);      // lower-cased, cut, for hashing downstream

// Pieces of a path-like word split on / . _ - (and ':' ',' '%' '@' '+' '=' whitespace); pure
// digit pieces are dropped (job ids, dates), `$VAR` references are emitted as var:NAME.
void emit_word_pieces(std::string_view word, TokenSink& sink);
void emit_var_refs(std::string_view word, TokenSink& sink);

// ---- the two kinds of line ----
// If `line` (left-trimmed, starts with '#') is a scheduler directive, emits its typed tokens and
// returns true; otherwise returns false and emits nothing (a comment).
bool tokenize_directive(std::string_view line, TokenSink& sink);
void tokenize_shell_line(std::string_view line, TokenSink& sink);

}  // namespace peakcast::features::detail
