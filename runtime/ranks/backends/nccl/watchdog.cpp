#include "ranks/backends/nccl/watchdog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>

#include "ranks/errors.hpp"

namespace ranks::backends::nccl::detail {

namespace {

std::string describe_entry(const FlightEntry& e, Clock::time_point now) {
  const double age = std::chrono::duration<double>(now - e.enqueued).count();
  return fmt::format("seq {} {} {} at {} ({}, enqueued {:.3f} s ago)", e.seq, op_name(e.op),
                     e.sizes, e.where, e.state, age);
}

}  // namespace

bool exit_on_timeout() {
  static const bool exit_mode = [] {
    const char* value = std::getenv("RANKS_NCCL_ON_TIMEOUT");
    if (value == nullptr || *value == '\0' || std::string_view(value) == "abort") return false;
    if (std::string_view(value) == "exit") return true;
    throw InvalidArgument(
        fmt::format("RANKS_NCCL_ON_TIMEOUT='{}' is not 'abort' or 'exit'", value));
  }();
  return exit_mode;
}

Watchdog& Watchdog::instance() {
  static Watchdog watchdog;
  return watchdog;
}

Watchdog::Watchdog() : thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::watch(const std::shared_ptr<NcclWork>& work) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_.push_back(work);
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kPollInterval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    poll_once();
    lock.lock();
  }
}

void Watchdog::poll_once() {
  std::vector<std::shared_ptr<NcclWork>> works;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    works = in_flight_;
  }
  std::vector<std::shared_ptr<NcclWork>> retired;
  std::set<Communicator*> seen;
  for (const auto& work : works) {
    if (work->poll()) retired.push_back(work);
    Communicator& comm = *work->comm();
    if (seen.insert(&comm).second) comm.check_async_error();
  }
  // Aborts happen here, after every waiter of the group has its error (see Communicator::fail).
  for (Communicator* comm : seen) {
    if (comm->failed()) comm->abort();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& work : retired) {
    auto it = std::find(in_flight_.begin(), in_flight_.end(), work);
    if (it == in_flight_.end()) continue;
    in_flight_.erase(it);
    finished_.push_back(work->entry());
    if (finished_.size() > kRecorded) finished_.pop_front();
  }
}

std::string Watchdog::flight_record(const std::string& group, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  int count = 0;
  for (const auto& work : in_flight_) {
    const FlightEntry& e = work->entry();
    if (e.group != group) continue;
    out += fmt::format("{}{}", count++ == 0 ? "" : "; ", describe_entry(e, now));
  }
  std::string last = "none";
  for (auto it = finished_.rbegin(); it != finished_.rend(); ++it) {
    if (it->group == group && it->state == "completed") {
      last = fmt::format("seq {} {}", it->seq, op_name(it->op));
      break;
    }
  }
  return fmt::format("flight recorder of group '{}': {} op(s) in flight{}{}; last completed: {}",
                     group, count, count > 0 ? ": " : "", out, last);
}

void Watchdog::dump(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(stderr, "ranks: nccl flight recorder (%zu in flight, last %zu finished):\n",
               in_flight_.size(), finished_.size());
  for (const auto& work : in_flight_) {
    std::fprintf(stderr, "  group '%s' %s\n", work->entry().group.c_str(),
                 describe_entry(work->entry(), now).c_str());
  }
  for (const auto& e : finished_) {
    std::fprintf(stderr, "  group '%s' %s\n", e.group.c_str(), describe_entry(e, now).c_str());
  }
  std::fflush(stderr);
}

}  // namespace ranks::backends::nccl::detail
