#pragma once
// What a job's ranks start dies with the job, however the launcher ends. Each rank is its own
// process group (a data-loader worker, a shell it runs) and dies with the launcher by
// PR_SET_PDEATHSIG, but what it started does not: a launcher killed outright (SIGKILL, the OOM
// killer, a crash) cannot stop those groups itself.
//
// The guard is a small process of its own, made before any rank, in a session of its own (a kill
// of the launcher's process group spares it) and holding none of the launcher's files. It reads
// a pipe whose writing end only the launcher holds: each rank's process group as it is started,
// then a release once the launcher has stopped them all itself. Should the pipe close without a
// release, the launcher is gone: the guard kills every group it was told of, then ends. It is no
// child of the launcher's (made through a child that exits at once), so the launcher's reaping
// of its ranks never sees it.

#include <sys/types.h>

namespace ranks::cli {

class JobGuard {
 public:
  // Starts the guard. Without one (no process left to make) the job runs unguarded, as before.
  JobGuard();
  ~JobGuard();  // closes the pipe: a guard not released kills the groups
  JobGuard(const JobGuard&) = delete;
  JobGuard& operator=(const JobGuard&) = delete;

  // The process group of a rank just started.
  void watch(pid_t group);
  // The launcher has stopped every group itself: the guard ends without killing.
  void release();

 private:
  int pipe_ = -1;  // the writing end
};

}  // namespace ranks::cli
