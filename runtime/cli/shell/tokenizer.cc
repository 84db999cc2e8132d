// Shell-like words: see tokenizer.h.
#include "runtime/cli/shell/tokenizer.h"

namespace cumulus::cli::shell {

Tokens SplitWords(const std::string& line) {
  Tokens out;
  std::string word;
  bool in_word = false;
  enum { kPlain, kSingle, kDouble } mode = kPlain;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (mode == kSingle) {
      if (c == '\'')
        mode = kPlain;
      else
        word += c;
      continue;
    }
    if (mode == kDouble) {
      if (c == '"') {
        mode = kPlain;
      } else if (c == '\\' && i + 1 < line.size() &&
                 (line[i + 1] == '"' || line[i + 1] == '\\' || line[i + 1] == '$' ||
                  line[i + 1] == '`')) {
        word += line[++i];
      } else if (c == '\\' && i + 1 == line.size()) {
        out.unterminated = true;
      } else {
        word += c;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) out.words.push_back(word);
      word.clear();
      in_word = false;
      continue;
    }
    if (c == '#' && !in_word) break;  // a comment
    in_word = true;
    if (c == '\'') {
      mode = kSingle;
    } else if (c == '"') {
      mode = kDouble;
    } else if (c == '\\') {
      if (i + 1 < line.size())
        word += line[++i];
      else
        out.unterminated = true;
    } else {
      word += c;
    }
  }
  if (mode != kPlain) out.unterminated = true;
  if (in_word) out.words.push_back(word);
  out.ends_in_word = in_word;
  return out;
}

Result<std::vector<std::string>> Tokenize(const std::string& line) {
  Tokens t = SplitWords(line);
  if (t.unterminated) {
    return Status::InvalidArgument(
        "the line ends inside a quote or after a backslash: close the quote or drop the "
        "backslash");
  }
  return t.words;
}

std::string Quote(const std::string& word) {
  if (word.empty()) return "''";
  bool plain = true;
  for (char c : word) {
    if (c == ' ' || c == '\t' || c == '\'' || c == '"' || c == '\\' || c == '#' || c == '\n') {
      plain = false;
      break;
    }
  }
  if (plain) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

}  // namespace cumulus::cli::shell
