// README.md read as an administrator reads it: a section cut into blocks (paragraphs, list
// items, table rows, code blocks) and sentences of code spans, and what those spans name: long
// options with the program each is named for, /metrics series and /healthz fields.
#pragma once

#include <cctype>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace peakcast::serve::testing {

// The text from the line "## TITLE" to the next "## " heading; empty when there is none.
inline std::string readme_section(const std::string& readme, const std::string& title) {
  const std::string head = "\n## " + title + "\n";
  const size_t at = readme.find(head);
  if (at == std::string::npos) return {};
  const size_t from = at + head.size();
  const size_t to = readme.find("\n## ", from);
  return readme.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

// The titles of the "## " sections, in order.
inline std::vector<std::string> readme_section_titles(const std::string& readme) {
  std::vector<std::string> out;
  std::istringstream in(readme);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("## ")) out.push_back(line.substr(3));
  }
  return out;
}

struct Sentence {
  std::vector<std::string> spans;  // its code spans, in order
  std::string text;                // the whole sentence, for messages
};

struct Block {
  bool table_row = false;
  std::vector<Sentence> sentences;
};

// A paragraph's or row's sentences: a '.' followed by a space or the end, outside code spans,
// ends one.
inline std::vector<Sentence> split_sentences(const std::string& text) {
  std::vector<Sentence> out(1);
  bool in_code = false;
  std::string span;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    out.back().text += c;
    if (c == '`') {
      if (in_code) out.back().spans.push_back(span);
      span.clear();
      in_code = !in_code;
    } else if (in_code) {
      span += c;
    } else if (c == '.' && (i + 1 == text.size() || text[i + 1] == ' ')) {
      out.emplace_back();
    }
  }
  return out;
}

// A section's blocks. An indented code block (4 columns beyond the text, which a numbered list
// item indents by 3) is a block of one sentence a command, each one span (a line ending in '\'
// goes on on the next); each table row is a block; a paragraph or list item runs to a blank line; a fenced block
// (a program's output) is left out.
inline std::vector<Block> readme_blocks(const std::string& section) {
  std::vector<Block> out;
  std::string text;
  std::vector<Sentence> code;
  bool continued = false;  // the code line before ended in '\'
  auto flush = [&] {
    if (!text.empty()) out.push_back({false, split_sentences(text)});
    if (!code.empty()) out.push_back({false, code});
    text.clear();
    code.clear();
    continued = false;
  };
  const std::regex list_item(R"(^\d+\. )");
  size_t list_indent = 0;
  bool fenced = false;
  std::istringstream in(section);
  for (std::string line; std::getline(in, line);) {
    const size_t indent = line.find_first_not_of(' ');
    if (indent != std::string::npos && line.compare(indent, 3, "```") == 0) {
      flush();
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    if (indent == std::string::npos) {
      flush();
      continue;
    }
    std::string content = line.substr(indent);
    if (indent == 0 && std::regex_search(content, list_item)) {
      flush();
      list_indent = 3;
    } else if (indent >= list_indent + 4) {
      if (!text.empty()) flush();
      const bool goes_on = content.ends_with("\\");
      if (goes_on) content.pop_back();
      if (!continued) code.emplace_back();
      std::string& command = code.back().text;
      command += (command.empty() ? "" : " ") + content;
      code.back().spans = {command};
      continued = goes_on;
      continue;
    } else if (content.starts_with("|")) {
      flush();
      if (content.find("---") == std::string::npos) out.push_back({true, split_sentences(content)});
      continue;
    } else if (indent == 0) {
      if (text.empty()) list_indent = 0;  // a paragraph at the margin ends the list
    }
    if (!code.empty()) flush();
    text += (text.empty() ? "" : " ") + content;
  }
  flush();
  return out;
}

inline std::vector<std::string> words_of(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// The program a code span runs, when it is a command line: "peakcastd", "peakcast SUB", or
// "peakcast" (an option before any subcommand); "other" for another program's command line (a
// first word and an option after it: `sacct -B`); "" for a span that runs nothing (an option, a
// path, a value, a bare `peakcast`: the service user).
inline std::string program_of(const std::string& span) {
  const std::vector<std::string> w = words_of(span);
  const std::regex env(R"(^[A-Z_][A-Z0-9_]*=)");
  size_t i = 0;
  while (i < w.size() && std::regex_search(w[i], env)) ++i;
  if (i == w.size() || w[i].starts_with("-")) return "";
  const std::string base = w[i].substr(w[i].rfind('/') + 1);
  bool has_option = false;  // `-B`, `--format=...`; not `socat -`
  for (size_t j = i + 1; j < w.size(); ++j) {
    const std::string& x = w[j];
    has_option = has_option || (x.size() > 1 && x[0] == '-' && (x[1] == '-' || std::isalpha(static_cast<unsigned char>(x[1]))));
  }
  if (base == "peakcastd") return base;
  if (base == "peakcast") {
    const std::regex sub(R"(^[a-z][a-z-]*$)");
    for (size_t j = i + 1; j < w.size(); ++j) {
      if (std::regex_match(w[j], sub)) return "peakcast " + w[j];
      if (!w[j].starts_with("-")) break;
    }
    return has_option ? "peakcast" : "";
  }
  return has_option ? "other" : "";
}

// The long options in a span: `--sync-interval S`, `[--json F]`, `--mem=…`.
inline std::vector<std::string> long_options_in(const std::string& span) {
  static const std::regex option(R"((?:^|[\s\[(|/])(--[a-z][a-z0-9-]*))");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(span.begin(), span.end(), option); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

struct OptionMention {
  std::string program;    // "peakcastd", "peakcast SUB" or "peakcast"
  std::string option;     // "--sync-interval"
  bool by_default;        // no program named in its sentence: the block's
  std::string sentence;
};

// The long options the blocks name, each with its program: a command line's own options are its
// program's (another program's, `sacct ... --format=...`, are left out); an option in a span of
// its own belongs to the program last named in its sentence, else to the block's: for a table row
// whose first span is a command line, that program, else `default_program`.
inline std::vector<OptionMention> option_mentions(const std::vector<Block>& blocks,
                                                  const std::string& default_program) {
  std::vector<OptionMention> out;
  for (const Block& b : blocks) {
    std::string block_program = default_program;
    if (b.table_row && !b.sentences.empty() && !b.sentences[0].spans.empty()) {
      const std::string p = program_of(b.sentences[0].spans[0]);
      if (!p.empty() && p != "other") block_program = p;
    }
    for (const Sentence& s : b.sentences) {
      std::string program = block_program;
      bool named = false;
      for (const std::string& span : s.spans) {
        const std::string p = program_of(span);
        if (p == "other") continue;
        if (!p.empty()) {
          program = p;
          named = true;
        }
        for (const std::string& o : long_options_in(span)) out.push_back({program, o, !named, s.text});
      }
    }
  }
  return out;
}

// The `peakcast_...` names in the blocks' code spans.
inline std::vector<std::string> metric_mentions(const std::vector<Block>& blocks) {
  static const std::regex name(R"(\bpeakcast_\w+)");
  std::vector<std::string> out;
  for (const Block& b : blocks) {
    for (const Sentence& s : b.sentences) {
      for (const std::string& span : s.spans) {
        for (auto it = std::sregex_iterator(span.begin(), span.end(), name); it != std::sregex_iterator(); ++it) {
          out.push_back(it->str());
        }
      }
    }
  }
  return out;
}

// The /healthz fields the blocks name: after a `/healthz` span, the spans of its sentence that
// look like a field path (`history_keys`, `storage.wal_bytes`), up to a `/metrics` span or a
// command line; metric names among them are left to metric_mentions.
inline std::vector<std::string> healthz_field_mentions(const std::vector<Block>& blocks) {
  static const std::regex field(R"(^[a-z_]+(\.[a-z_]+)*$)");
  std::vector<std::string> out;
  for (const Block& b : blocks) {
    for (const Sentence& s : b.sentences) {
      bool after_healthz = false;
      for (const std::string& span : s.spans) {
        if (span == "/healthz") {
          after_healthz = true;
        } else if (span == "/metrics" || !program_of(span).empty()) {
          after_healthz = false;
        } else if (after_healthz && std::regex_match(span, field) && !span.starts_with("peakcast_")) {
          out.push_back(span);
        }
      }
    }
  }
  return out;
}

}  // namespace peakcast::serve::testing
