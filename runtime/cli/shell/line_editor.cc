// The shell's prompt on libedit: see line_editor.h.
#include "runtime/cli/shell/line_editor.h"

#include <histedit.h>
#include <langinfo.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>

#include "runtime/cli/interrupt.h"
#include "runtime/cli/shell/tokenizer.h"

namespace cumulus::cli::shell {

struct LineEditor::Impl {
  LineEditorOptions options;
  Completer* completer = nullptr;
  EditLine* el = nullptr;
  History* history = nullptr;

  ~Impl() {
    if (el) el_end(el);
    if (history) history_end(history);
  }
};

namespace {

char* Prompt(EditLine* el) {
  void* data = nullptr;
  el_get(el, EL_CLIENTDATA, &data);
  return const_cast<char*>(static_cast<LineEditorOptions*>(data)->prompt.c_str());
}

// Reads one character for libedit. Ctrl-C (SIGINT, which only sets a flag) ends the read with an
// error, so el_gets returns and the shell drops the line. The wait watches the interrupt's wake
// pipe beside the terminal: the signal may be delivered to any thread (a completion fetch), and a
// key typed after the Ctrl-C must not be read before it. SIGINT is also blocked except inside
// ppoll, which unblocks it atomically while it waits, so one that lands on this thread between
// reads is seen at the next read. A character of several bytes (UTF-8: "é") is read whole and
// decoded in the locale's encoding; a byte that starts no character is handed on as it is.
int GetChar(EditLine*, wchar_t* c) {
  sigset_t sigint, outside;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigint, &outside);
  sigset_t waiting = outside;
  sigdelset(&waiting, SIGINT);
  int result = -1;
  std::mbstate_t state{};
  while (true) {
    if (Interrupted()) break;
    struct pollfd p[2]{};
    p[0].fd = STDIN_FILENO;
    p[0].events = POLLIN;
    p[1].fd = InterruptWakeFd();  // -1: poll ignores it
    p[1].events = POLLIN;
    int ready = ppoll(p, 2, nullptr, &waiting);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (Interrupted()) break;  // Ctrl-C before whatever key came with it
    if (p[1].revents & POLLIN) {
      // A wake byte with no Ctrl-C behind it (written after a ClearInterrupt had already reset the
      // flag): drained, or the wait would return at once for ever.
      char stale[64];
      while (read(p[1].fd, stale, sizeof(stale)) > 0) {
      }
    }
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    unsigned char byte;
    ssize_t n = read(STDIN_FILENO, &byte, 1);
    if (n == 1) {
      wchar_t wide = 0;
      size_t used = std::mbrtowc(&wide, reinterpret_cast<const char*>(&byte), 1, &state);
      if (used == static_cast<size_t>(-2)) continue;  // more bytes of this character to come
      *c = used == static_cast<size_t>(-1) ? static_cast<wchar_t>(byte) : wide;
      result = 1;
      break;
    }
    if (n == 0) {
      result = 0;
      break;
    }
    if (errno != EINTR && errno != EAGAIN) break;
  }
  pthread_sigmask(SIG_SETMASK, &outside, nullptr);
  return result;
}

// What the completion key binding calls: the completer's own state is reached through a static,
// as libedit's client data holds the prompt's options.
Completer* active_completer = nullptr;

unsigned char Complete(EditLine* el, int) {
  if (!active_completer) return CC_ERROR;
  const LineInfo* li = el_line(el);
  std::string before(li->buffer, li->cursor);
  Tokens t = SplitWords(before);
  std::string partial;
  if (t.ends_in_word && !t.words.empty()) {
    partial = t.words.back();
    t.words.pop_back();
  }
  std::vector<std::string> options = active_completer->Complete(t.words, partial);
  if (options.empty()) return CC_REFRESH_BEEP;
  std::string common = CommonPrefix(options);
  if (options.size() == 1) {
    std::string insert = common.substr(partial.size());
    // A whole word gets its separating space; a flag's KEY= and an EXPERIMENT/ do not.
    if (common.empty() || (common.back() != '=' && common.back() != '/')) insert += " ";
    el_insertstr(el, insert.c_str());
    return CC_REFRESH;
  }
  if (common.size() > partial.size()) {
    el_insertstr(el, common.substr(partial.size()).c_str());
    return CC_REFRESH;
  }
  // Several: list them under the line, then draw the prompt and the line again.
  std::string list = "\n";
  size_t width = 0;
  for (auto& o : options) width = std::max(width, o.size());
  size_t per_line = std::max<size_t>(1, 78 / (width + 2)), shown = 0;
  for (size_t i = 0; i < options.size() && shown < 200; ++i, ++shown) {
    std::string cell = options[i];
    cell.resize(width + 2, ' ');
    list += cell;
    if ((i + 1) % per_line == 0) list += "\n";
  }
  if (list.back() != '\n') list += "\n";
  if (options.size() > shown) list += "(" + std::to_string(options.size() - shown) + " more)\n";
  std::fputs(list.c_str(), stdout);
  std::fflush(stdout);
  return CC_REDISPLAY;
}

void UseTerminalEncoding() {
  std::setlocale(LC_CTYPE, "");
  if (std::strcmp(nl_langinfo(CODESET), "ANSI_X3.4-1968") == 0) {  // glibc's name for ASCII
    if (!std::setlocale(LC_CTYPE, "C.UTF-8")) std::setlocale(LC_CTYPE, "C.utf8");
  }
}

}  // namespace

std::string DefaultHistoryFile() {
  if (const char* f = std::getenv("CUMULUS_HISTORY"); f && *f) return f;
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.cumulus_history";
  }
  return "";
}

LineEditor::LineEditor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LineEditor::~LineEditor() { active_completer = nullptr; }

Result<std::unique_ptr<LineEditor>> LineEditor::Create(const LineEditorOptions& options,
                                                       Completer* completer) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->completer = completer;
  impl->history = history_init();
  if (!impl->history) return Status::Internal("libedit: cannot set up the history");
  HistEvent ev;
  history(impl->history, &ev, H_SETSIZE, options.history_size);
  history(impl->history, &ev, H_SETUNIQUE, 1);
  if (!options.history_file.empty()) {
    history(impl->history, &ev, H_LOAD, options.history_file.c_str());  // none yet is fine
  }
  // libedit reads and writes characters in the locale's encoding: the environment's, or UTF-8
  // where that is plain ASCII (C, POSIX), so that "café" typed is "café" run, not "caf".
  UseTerminalEncoding();
  impl->el = el_init("cumulus", stdin, stdout, stderr);
  if (!impl->el) return Status::Internal("libedit: cannot set up the terminal (is TERM set?)");
  el_set(impl->el, EL_CLIENTDATA, &impl->options);
  el_set(impl->el, EL_PROMPT, &Prompt);
  el_set(impl->el, EL_EDITOR, "emacs");
  el_set(impl->el, EL_HIST, history, impl->history);
  el_set(impl->el, EL_GETCFN, &GetChar);
  el_set(impl->el, EL_ADDFN, "cumulus-complete", "complete a command, flag or id", &Complete);
  el_set(impl->el, EL_BIND, "^I", "cumulus-complete", nullptr);
  el_source(impl->el, nullptr);  // the user's ~/.editrc, if any
  active_completer = completer;
  return std::unique_ptr<LineEditor>(new LineEditor(std::move(impl)));
}

LineEditor::Outcome LineEditor::ReadLine(std::string* line) {
  ClearInterrupt();
  // The terminal goes to the editing mode before el_gets draws the prompt: this libedit draws it
  // first, and keys typed in between were taken in line mode, where a Ctrl-D became an end-of-file
  // mark that the switch to the editing mode then hid (the shell waited with Ctrl-D typed).
  el_set(impl_->el, EL_PREP_TERM, 1);
  int count = 0;
  const char* got = el_gets(impl_->el, &count);
  if (!got) {
    if (count < 0 && Interrupted()) {
      std::fputs("^C\n", stdout);
      std::fflush(stdout);
      return Outcome::kInterrupted;
    }
    return Outcome::kEnd;
  }
  *line = got;
  while (!line->empty() && (line->back() == '\n' || line->back() == '\r')) line->pop_back();
  return Outcome::kLine;
}

void LineEditor::Remember(const std::string& line) {
  if (line.find_first_not_of(" \t") == std::string::npos) return;
  HistEvent ev;
  history(impl_->history, &ev, H_ENTER, line.c_str());
  if (impl_->options.history_file.empty()) return;
  if (history(impl_->history, &ev, H_SAVE, impl_->options.history_file.c_str()) >= 0) {
    chmod(impl_->options.history_file.c_str(), 0600);  // what was typed may name secrets
  }
}

}  // namespace cumulus::cli::shell
