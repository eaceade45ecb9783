# Writes OUTPUT, a header defining RANKS_GIT_REVISION as `git describe --always --dirty` of
# SOURCE_DIR, at build time, and only when the revision changed (so nothing rebuilds for it
# otherwise). Run by the ranks_git_revision target on every build: a revision taken when CMake
# configured would label rows measured by a later build with an old commit.
execute_process(COMMAND git describe --always --dirty --abbrev=7 WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT revision)
  set(revision unknown)
endif()
set(content "#pragma once\n#define RANKS_GIT_REVISION \"${revision}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE ${OUTPUT} "${content}")
endif()
