#include "registry/probe_isolated.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "registry/probe_wire.hpp"

namespace polyinfer {
namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  pid_t pid = -1;
  int fd = -1;  // read end of the pipe from the child
  std::string bytes;
  bool eof = false;
  std::string spawn_error;  // set when no child could be started
};

void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// In the child: the host's crash handlers (Python's faulthandler, a crash reporter) must not
// run on a plugin's crash, and a crash must not spend time writing a core file.
void reset_crash_handling() {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) std::signal(sig, SIG_DFL);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
}

[[noreturn]] void run_child(const PluginCandidate& c, int fd) {
  // A chatty driver must not write into the parent's stdout (think `backends --json`); the
  // child never restores it.
  dup2(STDERR_FILENO, STDOUT_FILENO);
  reset_crash_handling();
  write_all(fd, encode_probe(inspect_plugin(c.path, c.name)));
  // _exit: no atexit handlers or plugin destructors, which belong to the parent's state.
  _exit(0);
}

Child spawn(const PluginCandidate& c) {
  Child child;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    child.spawn_error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return child;
  }
  child.pid = fork();
  if (child.pid == 0) {
    close(fds[0]);
    run_child(c, fds[1]);
  }
  // Closing our write end now means EOF arrives when the child exits or crashes.
  close(fds[1]);
  if (child.pid < 0) {
    close(fds[0]);
    child.spawn_error = std::string("cannot fork: ") + std::strerror(errno);
    return child;
  }
  child.fd = fds[0];
  return child;
}

void read_some(Child& c) {
  char buf[4096];
  const ssize_t n = read(c.fd, buf, sizeof buf);
  if (n > 0) {
    c.bytes.append(buf, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    c.eof = true;
  }
}

int ms_until(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(left.count(), 0));
}

// Reads every child's answer until each pipe reaches EOF or the deadline passes.
void read_answers(std::vector<Child>& kids, Clock::time_point deadline) {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Child*> who;
    for (Child& c : kids) {
      if (c.fd >= 0 && !c.eof) {
        fds.push_back({c.fd, POLLIN, 0});
        who.push_back(&c);
      }
    }
    const int wait_ms = ms_until(deadline);
    if (fds.empty() || wait_ms == 0) return;
    if (poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) return;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) read_some(*who[i]);
    }
  }
}

// The child's wait status, once it has exited, waiting no later than the deadline; nullopt if
// it is still running then, or if it was reaped elsewhere (SIGCHLD set to SIG_IGN).
std::optional<int> wait_until(pid_t pid, Clock::time_point deadline, bool& running) {
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (Clock::now() >= deadline) {
      running = true;
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

PluginProbe broken(std::string reason) {
  PluginProbe p;
  p.status = PluginStatus::kBroken;
  p.reason = std::move(reason);
  return p;
}

PluginProbe verdict(Child& c, Clock::time_point deadline, std::chrono::milliseconds timeout) {
  if (!c.spawn_error.empty()) return broken(c.spawn_error);
  close(c.fd);
  bool running = !c.eof;
  const std::optional<int> status = running ? std::nullopt : wait_until(c.pid, deadline, running);
  if (running) {
    kill(c.pid, SIGKILL);
    waitpid(c.pid, nullptr, 0);
    return broken("probe hung (killed after " + format_seconds(timeout) + ")");
  }
  if (status && WIFSIGNALED(*status)) {
    return broken("probe crashed (signal " + std::to_string(WTERMSIG(*status)) + ")");
  }
  const std::optional<PluginProbe> answer = decode_probe(c.bytes);
  if (answer && (!status || (WIFEXITED(*status) && WEXITSTATUS(*status) == 0))) return *answer;
  if (status && WIFEXITED(*status)) {
    return broken("probe exited with status " + std::to_string(WEXITSTATUS(*status)) +
                  " without answering");
  }
  return broken("probe ended without answering");
}

}  // namespace

std::string format_seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

std::vector<PluginProbe> probe_isolated(const std::vector<PluginCandidate>& candidates,
                                        std::chrono::milliseconds timeout) {
  if (candidates.empty()) return {};
  // Buffered output would otherwise be flushed twice if a plugin calls exit() in the child.
  std::fflush(nullptr);
  const Clock::time_point deadline = Clock::now() + timeout;
  std::vector<Child> kids;
  kids.reserve(candidates.size());
  for (const PluginCandidate& c : candidates) kids.push_back(spawn(c));
  read_answers(kids, deadline);
  std::vector<PluginProbe> results;
  for (Child& c : kids) results.push_back(verdict(c, deadline, timeout));
  return results;
}

}  // namespace polyinfer
