// Splits a line of the shell into words the way a POSIX shell does, without expansions:
// whitespace separates words; 'single quotes' keep everything; "double quotes" keep everything
// but \" \\ \$ \`; a backslash outside quotes keeps the next character; a word starting with #
// begins a comment that runs to the end of the line.
#pragma once

#include <string>
#include <vector>

#include "cumulus/status.h"

namespace cumulus::cli::shell {

struct Tokens {
  std::vector<std::string> words;
  // The line ends inside a word (no whitespace after it): completion completes that word.
  bool ends_in_word = false;
  // The line ends inside quotes ('...' or "..." not closed) or after a lone backslash.
  bool unterminated = false;
};

// Never fails: an unterminated quote is reported in the result (completion works on it).
Tokens SplitWords(const std::string& line);
// The words of a complete line; InvalidArgument naming the problem for an unterminated quote.
Result<std::vector<std::string>> Tokenize(const std::string& line);
// `word` written so that Tokenize reads it back as one word (quoted only when it must be).
std::string Quote(const std::string& word);

}  // namespace cumulus::cli::shell
