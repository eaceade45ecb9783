# cmake -DRANKS=... -DPROGRAM=... -DRANKS_N=... -DEXPECT=ok -DWORK=dir [-DARGS=...] -P check_outcome.cmake
# Runs PROGRAM under `ranks sim` twice and checks (1) the report's outcome is EXPECT, (2) the exit
# status is 0 exactly when EXPECT is ok, and (3) both runs wrote byte-identical reports and traces.
file(MAKE_DIRECTORY ${WORK})
foreach(run a b)
  execute_process(
    COMMAND ${RANKS} sim -n ${RANKS_N} ${ARGS} --report ${WORK}/report.${run}.json
            --trace ${WORK}/trace.${run}.json -- ${PROGRAM}
    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  set(status_${run} ${status})
endforeach()
file(READ ${WORK}/report.a.json report)
string(JSON outcome GET "${report}" outcome)
if(NOT outcome STREQUAL EXPECT)
  message(FATAL_ERROR "expected outcome ${EXPECT}, got ${outcome}:\n${output}")
endif()
if((EXPECT STREQUAL "ok") AND NOT status_a EQUAL 0)
  message(FATAL_ERROR "outcome ok but exit status ${status_a}:\n${output}")
endif()
if((NOT EXPECT STREQUAL "ok") AND status_a EQUAL 0)
  message(FATAL_ERROR "outcome ${outcome} but exit status 0")
endif()
foreach(file report trace)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK}/${file}.a.json
                          ${WORK}/${file}.b.json RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "two runs wrote different ${file}s: the simulator is not deterministic")
  endif()
endforeach()
message(STATUS "${PROGRAM} on ${RANKS_N} ranks: ${outcome}, twice, identical reports and traces")
