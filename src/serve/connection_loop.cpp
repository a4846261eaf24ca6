#include "peakcast/serve/connection_loop.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "peakcast/core/log.h"

namespace peakcast::serve {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

constexpr uint64_t kWakeId = 0;
constexpr uint64_t kFirstListenerId = 1;
constexpr uint64_t kFirstConnId = 1 << 20;  // ids below are listeners
// Connections refused at accept (over max_connections) that linger, at most this many at once
// and each at most kLingerS: beyond, one is closed at once, as before.
constexpr size_t kMaxLingering = 64;
constexpr double kLingerS = 1.0;
// Out of descriptors (EMFILE, ENFILE), a listener is left disarmed this long, or until a
// connection closes: re-armed at once, level-triggered, it fired again at once, and the workers
// spun (65% of a core, 400,000 log lines in 5 s).
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr auto kFdWarningEvery = std::chrono::seconds(60);
// Descriptors the daemon needs beside its connections: SQLite's three files, a sacct call's
// pipes, the admin socket and its client, a model reload's files.
constexpr size_t kReservedFds = 16;

// One client connection. At most one thread works on it at a time: the worker epoll handed it
// to (EPOLLONESHOT), or the reaper when its deadline passed; `busy` says which, under the table
// lock.
struct Conn {
  int fd = -1;
  std::string buf;              // bytes received and not yet answered
  Clock::time_point deadline;   // idle, request or lingering deadline
  bool started = false;         // a request has begun arriving
  bool waiting = false;         // bytes arrived unread past the idle deadline: waits for a worker
  bool over_limit = false;      // refused at accept, over max_connections (lingering)
  bool closing = false;         // refused: draining input until the peer closes (lingering close)
  bool busy = false;            // a worker or the reaper holds it
  size_t served = 0;
  std::string out;              // an answer not yet written in full (the client reads slowly)
  size_t out_sent = 0;          // of `out`
  bool close_after_write = false;  // `out` is the last answer: close once it is written
  size_t expected = 0;          // bytes of the request arriving, once its head is in (0: not yet)
  size_t held = 0;              // of the budget of buffered bytes: buf's capacity
  ~Conn() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool write_all(int fd, std::string_view data, double timeout_s) {
  const auto deadline = after(timeout_s);
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
  }
  return true;
}

// Leader/follower: every worker waits in epoll_wait on the one epoll set; the one woken for a
// connection reads what has arrived (non-blocking), and answers the request itself once it is
// complete (one wake-up per request), or re-arms the connection and goes back to waiting. So no
// worker ever waits on a client. A reaper pass (any worker, every 50 ms) enforces deadlines on
// connections no worker holds.
struct ConnectionLoop::Impl {
  const HttpLimits& limits;
  int threads;
  Handler handle;
  Refusal refusal;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::vector<int> listeners;  // id = kFirstListenerId + index
  std::atomic<bool> stopping{false};

  std::mutex table_mu;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;  // by id; ids are never reused
  size_t over_limit = 0;  // of conns: refused at accept, lingering (not counted as open)
  uint64_t next_id = kFirstConnId;

  std::mutex reap_mu;
  Clock::time_point next_reap = Clock::now();

  // Bytes the connections' buffers hold (their capacity), against limits.max_buffered_bytes.
  std::atomic<size_t> buffered{0};

  // Listeners disarmed for want of descriptors (by index), until resume_at or a connection closes.
  std::mutex pause_mu;
  std::vector<bool> paused;
  std::atomic<bool> any_paused{false};
  Clock::time_point resume_at;
  std::atomic<bool> out_of_fds{false};  // an episode is under way (logged once, at its start)
  // When the last episode's warning was logged (steady clock, ns; 0: never), and whether the
  // episode under way was: episodes that follow one within kFdWarningEvery are not logged (a
  // descriptor freed for a moment ends an episode, and the next accept starts another), nor is
  // their end.
  std::atomic<int64_t> last_fd_warning_ns{0};
  std::atomic<bool> fd_episode_logged{false};

  Impl(const HttpLimits& l, int t, Handler h, Refusal r)
      : limits(l), threads(t), handle(std::move(h)), refusal(std::move(r)) {
    epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd < 0 || wake_fd < 0) throw std::runtime_error("connection loop: epoll/eventfd failed");
    epoll_event ev{};
    ev.events = EPOLLIN;  // level-triggered: once written, every worker sees it
    ev.data.u64 = kWakeId;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev);
  }
  ~Impl() {
    for (int fd : listeners) ::close(fd);
    ::close(wake_fd);
    ::close(epoll_fd);
  }

  void arm(int fd, uint64_t id, int op, bool for_writing = false) {
    epoll_event ev{};
    ev.events = (for_writing ? EPOLLOUT : EPOLLIN) | EPOLLONESHOT;
    ev.data.u64 = id;
    ::epoll_ctl(epoll_fd, op, fd, &ev);
  }

  void run() {
    warn_if_descriptors_short();
    std::vector<std::thread> workers;
    for (int i = 0; i < threads; ++i) workers.emplace_back([this] { work(); });
    for (auto& t : workers) t.join();
    // Every request a worker had begun is answered; what has not fully arrived is not. An answer
    // the socket had no room for gets what room there is now.
    std::lock_guard lock(table_mu);
    for (auto& [id, c] : conns) (void)flush(c.get());
    conns.clear();
    for (int fd : listeners) ::close(fd);
    listeners.clear();
  }

  void work() {
    while (!stopping) {
      epoll_event ev{};
      const int n = ::epoll_wait(epoll_fd, &ev, 1, 100);
      if (n == 1 && !stopping) {
        const uint64_t id = ev.data.u64;
        if (id >= kFirstConnId) {
          serve(id);
        } else if (id >= kFirstListenerId) {
          const size_t i = static_cast<size_t>(id - kFirstListenerId);
          if (accept_all(listeners[i])) arm(listeners[i], id, EPOLL_CTL_MOD);
          else pause(i);
        }
      }
      if (any_paused) resume(false);
      reap();
    }
  }

  void pause(size_t listener) {
    std::lock_guard lock(pause_mu);
    if (paused.size() < listeners.size()) paused.resize(listeners.size(), false);
    paused[listener] = true;
    resume_at = Clock::now() + kAcceptPause;
    any_paused = true;
  }
  // Re-arms the paused listeners once their pause is over (`now`: at once, a descriptor was freed).
  void resume(bool now) {
    std::lock_guard lock(pause_mu);
    if (!any_paused || (!now && Clock::now() < resume_at)) return;
    for (size_t i = 0; i < paused.size(); ++i) {
      if (paused[i]) arm(listeners[i], kFirstListenerId + i, EPOLL_CTL_MOD);
      paused[i] = false;
    }
    any_paused = false;
  }

  // Whether the episode starting now is logged: none was in the last kFdWarningEvery.
  bool fd_warning_due() {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
    const int64_t every = std::chrono::duration_cast<std::chrono::nanoseconds>(kFdWarningEvery).count();
    int64_t last = last_fd_warning_ns.load();
    if (last != 0 && now - last < every) return false;
    if (!last_fd_warning_ns.compare_exchange_strong(last, now)) return false;
    fd_episode_logged = true;
    return true;
  }

  // Accepts what is waiting; false: out of descriptors, the listener is to pause.
  bool accept_all(int listener) {
    while (true) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        if (errno != EMFILE && errno != ENFILE) return true;  // EAGAIN: all taken
        if (!out_of_fds.exchange(true) && fd_warning_due()) {
          log(LogLevel::kWarn, std::string("http: out of file descriptors (") +
                                   (errno == EMFILE ? "EMFILE: the daemon's RLIMIT_NOFILE" : "ENFILE: the system's") +
                                   "): new connections wait until one closes (raise LimitNOFILE or lower "
                                   "--max-connections); said once until accepting works again");
        }
        return false;
      }
      if (out_of_fds.exchange(false) && fd_episode_logged.exchange(false)) {
        log(LogLevel::kInfo, "http: accepting connections again");
      }
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->deadline = after(limits.idle_timeout_s);
      std::unique_lock lock(table_mu);
      if (conns.size() - over_limit < limits.max_connections) {
        const uint64_t id = next_id++;
        conns.emplace(id, std::move(c));
        arm(fd, id, EPOLL_CTL_ADD);
        continue;
      }
      // Over the limit: 503, then drain what the client sends (its request, likely on the way)
      // until it closes or kLingerS passes. Closed at once with its request unread, the socket
      // would be reset and the 503 lost. Nothing here waits; workers drain it as any refusal.
      auto answer = [this] {
        return refusal(503, "over the limit of " + std::to_string(limits.max_connections) +
                                " open connections; try again");
      };
      if (over_limit >= kMaxLingering) {
        lock.unlock();
        write_all(fd, answer(), 0.0);
        continue;  // ~Conn closes it
      }
      ++over_limit;
      c->over_limit = c->closing = c->busy = true;  // held here until armed
      c->deadline = after(std::min(kLingerS, limits.request_timeout_s));
      const uint64_t id = next_id++;
      Conn* const held = c.get();
      conns.emplace(id, std::move(c));
      lock.unlock();
      write_all(fd, answer(), 0.0);
      ::shutdown(fd, SHUT_WR);
      lock.lock();
      arm(fd, id, EPOLL_CTL_ADD);
      held->busy = false;
    }
  }

  // --max-connections beyond what RLIMIT_NOFILE leaves: past that many, accepts pause.
  void warn_if_descriptors_short() const {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
    std::error_code ec;
    size_t open = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
         it.increment(ec)) {
      ++open;
    }
    const size_t own = open + kReservedFds;
    const size_t left = rl.rlim_cur > own ? static_cast<size_t>(rl.rlim_cur) - own : 0;
    if (limits.max_connections <= left) return;
    log(LogLevel::kWarn, fmt::format("--max-connections {} is more than the file descriptors left for "
                                     "connections: {} (RLIMIT_NOFILE {}, {} open, {} kept for the database, "
                                     "sacct and reloads); past {} connections new ones wait (raise "
                                     "LimitNOFILE or `ulimit -n`, or lower --max-connections)",
                                     limits.max_connections, left, static_cast<uint64_t>(rl.rlim_cur), open,
                                     kReservedFds, left));
  }

  // Takes the connection for this worker; nullptr when it is gone or the reaper holds it.
  Conn* take(uint64_t id) {
    std::lock_guard lock(table_mu);
    auto it = conns.find(id);
    if (it == conns.end() || it->second->busy) return nullptr;
    it->second->busy = true;
    return it->second.get();
  }
  // Re-arms under the table lock, so the reaper cannot close the socket (and a new connection
  // reuse its number) between the re-arm and the hand-back.
  // A connection with an answer still to write waits for room to write it (EPOLLOUT), and reads
  // nothing meanwhile.
  void release(uint64_t id, Conn* c) {
    std::lock_guard lock(table_mu);
    arm(c->fd, id, EPOLL_CTL_MOD, !c->out.empty());
    c->busy = false;
  }
  void drop(uint64_t id, Conn* c) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
    buffered -= c->held;
    {
      std::lock_guard lock(table_mu);
      if (c->over_limit) --over_limit;
      conns.erase(id);  // closes the socket
    }
    if (any_paused) resume(true);  // a descriptor is free
  }

  // Has the peer sent bytes not yet read (not counting a close)?
  static bool bytes_waiting(int fd) {
    char byte;
    return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  // Answers with a refusal, then reads and discards what the peer still sends (a body over the
  // limit, say) until it closes or the request deadline passes: a client still writing would
  // otherwise fail on a closed socket and never read the answer.
  void refuse(Conn* c, int status, const std::string& message) {
    write_all(c->fd, refusal(status, message), 0.0);
    ::shutdown(c->fd, SHUT_WR);
    c->closing = true;
    std::string().swap(c->buf);
    c->expected = 0;
    settle(c);
    c->deadline = after(limits.request_timeout_s);
  }

  // Makes room in c's buffer for `want` bytes in all, within the budget: one allocation of the
  // size asked (std::string's own growth doubles, so a 1.3 MB body read in chunks took up to
  // 2.6 MB, and 300 such connections 570 MB). false: over the budget, nothing changed.
  bool make_room(Conn* c, size_t want) {
    if (want <= c->buf.capacity()) return true;
    const size_t extra = want - c->held;
    size_t now = buffered.load();
    do {
      if (now + extra > limits.max_buffered_bytes) return false;
    } while (!buffered.compare_exchange_weak(now, now + extra));
    c->held = want;
    std::string bigger;
    bigger.reserve(want);  // from an empty string: exactly `want` (reserve on c->buf could double)
    bigger.append(c->buf);
    c->buf.swap(bigger);
    settle(c);
    return true;
  }
  // The budget follows the buffer's capacity; an emptied large buffer is given back.
  void settle(Conn* c) {
    if (c->buf.empty() && c->buf.capacity() > (64 << 10)) std::string().swap(c->buf);
    const size_t cap = c->buf.capacity();
    if (cap >= c->held) buffered += cap - c->held;
    else buffered -= c->held - cap;
    c->held = cap;
  }
  void refuse_over_budget(Conn* c) {
    refuse(c, 503, fmt::format("the daemon holds {} MiB of requests being received, at its limit of "
                               "{} MiB (--max-buffered-bytes); try again",
                               buffered.load() >> 20, limits.max_buffered_bytes >> 20));
  }

  // Writes what the socket takes now of c's pending answer, never waiting; false: the peer is gone.
  static bool flush(Conn* c) {
    while (c->out_sent < c->out.size()) {
      const ssize_t n = ::send(c->fd, c->out.data() + c->out_sent, c->out.size() - c->out_sent,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c->out_sent += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      }
    }
    c->out_sent = 0;
    if (c->out.capacity() > (64 << 10)) std::string().swap(c->out);
    else c->out.clear();
    return true;
  }

  // Woken with room to write: the rest of the answer, then the requests that arrived behind it.
  void resume_writing(uint64_t id, Conn* c) {
    if (!flush(c)) return drop(id, c);
    if (c->out.empty()) {
      if (c->close_after_write) return drop(id, c);
      c->deadline = after(c->started ? limits.request_timeout_s : limits.idle_timeout_s);
      if (!answer_complete(c)) return drop(id, c);
      settle(c);
    }
    release(id, c);
  }

  void serve(uint64_t id) {
    Conn* c = take(id);
    if (c == nullptr) return;
    if (!c->out.empty()) return resume_writing(id, c);
    char chunk[64 << 10];
    const ssize_t n = ::recv(c->fd, chunk, sizeof chunk, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      drop(id, c);  // the peer closed (or failed); a partial request is not answered
      return;
    }
    if (n > 0 && !c->closing) {
      c->waiting = false;
      if (!c->started) {
        c->started = true;
        c->deadline = after(limits.request_timeout_s);
      }
      if (!make_room(c, std::max(c->buf.size() + static_cast<size_t>(n), c->expected))) {
        refuse_over_budget(c);
        release(id, c);
        return;
      }
      c->buf.append(chunk, static_cast<size_t>(n));
      if (!answer_complete(c)) {
        drop(id, c);
        return;
      }
      settle(c);
    }
    release(id, c);
  }

  // Answers every complete request in the buffer (pipelining); false: close the connection.
  bool answer_complete(Conn* c) {
    while (true) {
      const Frame f = frame_request(c->buf, limits);
      if (f.state == FrameState::kIncomplete) {
        // The head is in: room for the whole request now, by its Content-Length (or a 503).
        c->expected = f.size;
        if (f.size > 0 && !make_room(c, f.size)) refuse_over_budget(c);
        return true;
      }
      if (f.state == FrameState::kRejected) {
        refuse(c, f.status, f.message);
        return true;
      }
      ++c->served;
      const bool last = c->served >= limits.max_requests_per_connection || stopping;
      bool keep = false;
      try {
        keep = handle(c->fd, c->out, std::string_view(c->buf).substr(0, f.size), last) && !last;
      } catch (const std::exception& e) {
        log(LogLevel::kError, std::string("http: answering a request: ") + e.what());
        c->out.clear();
      }
      // Written without waiting: what the socket does not take now waits for EPOLLOUT, within
      // write_timeout_s, and no worker waits with it. Blocking writes pinned a worker for
      // write_timeout_s per answer to a client that pipelines and never reads: as many such
      // clients as workers and the daemon answered nobody.
      if (!flush(c)) return false;
      if (!keep) {
        c->close_after_write = true;
        if (c->out.empty()) return false;
      }
      c->buf.erase(0, f.size);
      c->expected = 0;
      c->started = !c->buf.empty();  // a pipelined request has begun
      c->deadline = after(c->started ? limits.request_timeout_s : limits.idle_timeout_s);
      // The next pipelined request waits until this answer is written: one stalled client holds
      // one answer, never a worker.
      if (!c->out.empty()) {
        c->deadline = after(limits.write_timeout_s);
        return true;
      }
    }
  }

  // Connections past their deadline that no worker holds. Idle ones are closed, lingering ones
  // too. One with bytes waiting unread is not idle: every worker was busy when they came, so it
  // gets request_timeout_s more to be read, then 503. A request still arriving gets 408. A 408 or
  // 503 is answered with a lingering close: closed with the request unread, the socket would be
  // reset, and the answer lost.
  void reap() {
    const auto now = Clock::now();
    std::unique_lock guard(reap_mu, std::try_to_lock);
    if (!guard.owns_lock() || now < next_reap) return;
    next_reap = now + std::chrono::milliseconds(50);
    std::vector<std::pair<uint64_t, Conn*>> due;
    {
      std::lock_guard lock(table_mu);
      for (auto& [id, c] : conns) {
        if (!c->busy && c->deadline <= now) {
          c->busy = true;
          due.emplace_back(id, c.get());
        }
      }
    }
    for (auto [id, c] : due) {
      if (!c->out.empty() || c->closing || (!c->started && !bytes_waiting(c->fd))) {  // an answer not read in time: closed
        drop(id, c);
      } else if (c->started) {
        refuse(c, 408, fmt::format("request not received in full within {:g} s", limits.request_timeout_s));
        release(id, c);
      } else if (!c->waiting) {
        c->waiting = true;
        c->deadline = after(limits.request_timeout_s);
        release(id, c);  // re-armed: the next free worker reads it
      } else {
        refuse(c, 503, "every worker busy for " + std::to_string(limits.request_timeout_s) +
                           " s after the request arrived; try again");
        release(id, c);
      }
    }
  }
};

ConnectionLoop::ConnectionLoop(HttpLimits limits, int worker_threads, Handler handle, Refusal refusal)
    : limits_(limits),
      impl_(std::make_unique<Impl>(limits_, std::max(1, worker_threads), std::move(handle),
                                   std::move(refusal))) {}

ConnectionLoop::~ConnectionLoop() = default;

void ConnectionLoop::add_listener(int fd) {
  set_nonblocking(fd);
  const uint64_t id = kFirstListenerId + impl_->listeners.size();
  impl_->listeners.push_back(fd);
  impl_->arm(fd, id, EPOLL_CTL_ADD);
}

void ConnectionLoop::run() { impl_->run(); }

void ConnectionLoop::stop() {
  impl_->stopping = true;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(impl_->wake_fd, &one, sizeof one);
}

}  // namespace peakcast::serve
