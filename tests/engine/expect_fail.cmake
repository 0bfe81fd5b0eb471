# Runs EXE with ARGS and checks the bad-input contract: exit status STATUS, nothing on stdout,
# exactly one line on stderr that starts with "tokenloop: " and contains EXPECT.
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX MATCHALL "\n" newlines "${err}")
list(LENGTH newlines lines)
string(FIND "${err}" "${EXPECT}" at)
string(FIND "${err}" "tokenloop: " prefix)
if(NOT rc STREQUAL STATUS OR NOT lines EQUAL 1 OR at LESS 0 OR NOT prefix EQUAL 0 OR NOT out STREQUAL "")
  message(FATAL_ERROR "expected status ${STATUS} and one line containing\n  ${EXPECT}\n"
                      "got status ${rc}, stdout '${out}', stderr:\n${err}")
endif()
message(STATUS "ok: ${err}")
