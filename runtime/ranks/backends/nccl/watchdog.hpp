#pragma once
// The process's nccl watchdog and flight recorder.
//
// One thread per process (started with the first communicator) polls every op in flight each
// 50 ms: an op whose event fired is retired into the flight recorder; an op past its deadline
// fails its group with Timeout (NcclWork::poll); a group with an NCCL asynchronous error fails
// with BackendError; a failed group's communicator is aborted here, off the callers' threads,
// because ncclCommAbort can hang. With RANKS_NCCL_ON_TIMEOUT=exit a timeout prints its report
// and ends the process instead (torch's default for the same reason).
//
// The flight recorder keeps the ops in flight and the last kRecorded finished ones, so that a
// timeout names what was stuck, what was enqueued after it and what last completed.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ranks/backends/nccl/work.hpp"

namespace ranks::backends::nccl::detail {

class Watchdog {
 public:
  static constexpr size_t kRecorded = 64;
  static constexpr std::chrono::milliseconds kPollInterval{50};

  // The process's watchdog, started on first use; stopped at exit.
  static Watchdog& instance();
  ~Watchdog();

  void watch(const std::shared_ptr<NcclWork>& work);
  // The flight recorder's view of group `name`: its ops in flight (seq, op, sizes, call site,
  // age, state) and its last completed seq, as one paragraph.
  std::string flight_record(const std::string& group, Clock::time_point now);
  // Writes every entry to stderr (RANKS_NCCL_ON_TIMEOUT=exit, before leaving).
  void dump(Clock::time_point now);

 private:
  Watchdog();
  void loop();
  void poll_once();

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<std::shared_ptr<NcclWork>> in_flight_;
  std::deque<FlightEntry> finished_;  // the last kRecorded, oldest first
  std::thread thread_;
};

// Whether RANKS_NCCL_ON_TIMEOUT=exit (else "abort", the default); InvalidArgument otherwise.
bool exit_on_timeout();

}  // namespace ranks::backends::nccl::detail
