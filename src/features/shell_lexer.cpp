#include "features/tokenizer_internal.h"

namespace peakcast::features::detail {

namespace {
// Whether a backslash read next would join the next line to the logical line read so far. Not
// when it is itself escaped (POSIX sh, XCU 2.2.1: "\\" + newline is a literal backslash, and the
// line ends there). Inside single quotes a backslash is an ordinary character (2.2.2), but the
// newline after it is inside the open quote too, so the command goes on to the next line all the
// same: the line is joined, as the other shell that reads such a string (bash -c '...',
// env_parallel '...', a sed script) joins it. And not in a comment: a '#' that starts a word (at
// the start, or after a blank or one of bash's operator characters | & ; ( ) < >), outside quotes
// and not escaped, runs to the end of its line, so a backslash at its end is comment text (bash).
// That covers a whole comment or directive line (sbatch also reads each #SBATCH line alone) and a
// trailing "cmd # note \". Fed one character at a time, so a long chain of continuations is read
// once.
class LineScan {
 public:
  bool backslash_continues() const { return !comment_ && !escaped_; }
  void feed(char c) {
    if (comment_) return;
    if (escaped_) {  // the character after a backslash, in double quotes as outside them
      escaped_ = false;
      word_start_ = false;
      return;
    }
    if (quote_ == '\'') {
      if (c == '\'') quote_ = 0;
      return;
    }
    if (c == '\\') {
      escaped_ = true;
      return;
    }
    if (quote_ == '"') {
      if (c == '"') quote_ = 0;
      return;
    }
    if (c == '#' && word_start_) {
      comment_ = true;
      return;
    }
    if (c == '\'' || c == '"') quote_ = c;
    word_start_ = c == ' ' || c == '\t' || c == '|' || c == '&' || c == ';' || c == '(' ||
                  c == ')' || c == '<' || c == '>';
  }

 private:
  char quote_ = 0;
  bool escaped_ = false;
  bool word_start_ = true;
  bool comment_ = false;
};
}  // namespace

std::vector<std::string> logical_lines(std::string_view script) {
  std::vector<std::string> lines;
  std::string cur;
  LineScan scan;
  for (size_t i = 0; i < script.size(); ++i) {
    char c = script[i];
    if (c == '\r') continue;
    if (c == '\\' && scan.backslash_continues() && i + 1 < script.size() &&
        (script[i + 1] == '\n' || (script[i + 1] == '\r' && i + 2 < script.size() &&
                                   script[i + 2] == '\n'))) {
      // Continuation: the pair is removed, nothing put in its place (POSIX sh, XCU 2.2.1), so a
      // word split over two lines is one word, and the scan goes on in the state it had before
      // the backslash (a '#' right after the pair starts a comment only after a blank).
      i += script[i + 1] == '\r' ? 2 : 1;
      continue;
    }
    if (c == '\n') {
      lines.push_back(std::move(cur));
      cur.clear();
      scan = LineScan{};
      continue;
    }
    cur.push_back(c);
    scan.feed(c);
  }
  if (!cur.empty()) lines.push_back(std::move(cur));
  return lines;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  std::vector<Word> run() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (is_space(c)) {
        flush();
        ++i_;
      } else if (c == '\'') {
        ++i_;
        begin_quote();
        while (i_ < s_.size() && s_[i_] != '\'') cur_.text.push_back(s_[i_++]);
        ++i_;  // closing quote (or past the end)
      } else if (c == '"') {
        ++i_;
        begin_quote();
        while (i_ < s_.size() && s_[i_] != '"') {
          if (s_[i_] == '\\' && i_ + 1 < s_.size() &&
              (s_[i_ + 1] == '"' || s_[i_ + 1] == '\\' || s_[i_ + 1] == '$' ||
               s_[i_ + 1] == '`')) {
            ++i_;
          }
          cur_.text.push_back(s_[i_++]);
        }
        ++i_;
      } else if (c == '\\') {
        in_word_ = true;
        if (i_ + 1 < s_.size()) cur_.text.push_back(s_[i_ + 1]);
        i_ += 2;
      } else if (c == '#' && !in_word_) {
        break;  // comment to end of line
      } else if (c == '$' && i_ + 1 < s_.size() && s_[i_ + 1] == '{') {
        // ${VAR...}: keep inside the word up to the matching brace.
        in_word_ = true;
        int depth = 0;
        while (i_ < s_.size()) {
          char d = s_[i_];
          cur_.text.push_back(d);
          ++i_;
          if (d == '{') ++depth;
          if (d == '}' && --depth == 0) break;
        }
      } else if (c == '$' && i_ + 1 < s_.size() && s_[i_ + 1] == '(') {
        flush();
        op("$(", 2);
      } else if (c == '`' || c == '(' || c == ')' ) {
        flush();
        op(std::string(1, c), 1);
      } else if (c == '|') {
        flush();
        op(next_is('|') ? "||" : "|", next_is('|') ? 2 : 1);
      } else if (c == '&') {
        flush();
        if (next_is('&')) op("&&", 2);
        else if (next_is('>')) op("&>", 2);
        else op("&", 1);
      } else if (c == ';') {
        flush();
        op(next_is(';') ? ";;" : ";", next_is(';') ? 2 : 1);
      } else if (c == '>' || c == '<') {
        // "2>" and "1>": a bare fd number right before the redirection belongs to it.
        if (in_word_ && !cur_.quoted && (cur_.text == "1" || cur_.text == "2")) {
          cur_ = Word{};
          in_word_ = false;
        }
        flush();
        if (c == '>') {
          if (next_is('>')) op(">>", 2);
          else if (next_is('&')) op(">&", 2);
          else op(">", 1);
        } else {
          if (i_ + 2 < s_.size() && s_[i_ + 1] == '<' && s_[i_ + 2] == '<') op("<<<", 3);
          else if (next_is('<')) op("<<", 2);
          else op("<", 1);
        }
      } else {
        in_word_ = true;
        cur_.text.push_back(c);
        ++i_;
      }
    }
    flush();
    return std::move(out_);
  }

 private:
  void begin_quote() {
    if (!cur_.quoted) cur_.quote_start = cur_.text.size();
    cur_.quoted = true;
    in_word_ = true;
  }
  bool next_is(char c) const { return i_ + 1 < s_.size() && s_[i_ + 1] == c; }
  void op(std::string text, size_t len) {
    Word w;
    w.text = std::move(text);
    w.is_op = true;
    out_.push_back(std::move(w));
    i_ += len;
  }
  void flush() {
    if (in_word_) out_.push_back(std::move(cur_));
    cur_ = Word{};
    in_word_ = false;
  }

  std::string_view s_;
  size_t i_ = 0;
  Word cur_;
  bool in_word_ = false;
  std::vector<Word> out_;
};

}  // namespace

std::vector<Word> lex_shell_line(std::string_view line) { return Lexer(line).run(); }

}  // namespace peakcast::features::detail
