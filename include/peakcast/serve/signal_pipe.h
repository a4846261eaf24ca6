// Signals for a daemon, delivered as a value to one waiting thread. The handlers only write the
// signal number to a pipe (async-signal-safe), so they work whichever thread the kernel picks:
// threads that libraries start before main() (OpenBLAS, OpenMP) do not have the signals
// blocked, and with sigwait() alone a SIGTERM landing on one of them killed the daemon (143)
// without a log line or cleanup.
#pragma once

#include <initializer_list>

namespace peakcast::serve {

class SignalPipe {
 public:
  // Installs handlers for `signals` (SA_RESTART). Only one SignalPipe may exist at a time.
  explicit SignalPipe(std::initializer_list<int> signals);
  ~SignalPipe();  // restores the default dispositions
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // Blocks until a signal arrives (returns its number) or cancel() is called (returns 0).
  int wait();
  void cancel();

 private:
  int fds_[2] = {-1, -1};
  int signals_[8] = {};
  int count_ = 0;
};

}  // namespace peakcast::serve
