/* The one thing a simulated rank's switch needs that CPython's public API lacks: pointing this OS
 * thread's "GILState" slot at the rank's thread state. PyGILState_Ensure() (and pybind11's
 * gil_scoped_acquire, numpy's DLPack deleter, torch's callbacks) read that slot to find "this
 * thread's" state; left at another rank's state it would try to take the GIL this thread already
 * holds, and hang. The slot is internal to CPython, hence Py_BUILD_CORE in this file alone. */

#define Py_BUILD_CORE 1
#include <Python.h>

#include "internal/pycore_runtime.h"

void ranks_python_point_gilstate_at(PyThreadState* state) {
#if PY_VERSION_HEX >= 0x030C0000
  PyThread_tss_set(&_PyRuntime.autoTSSkey, state);
#else
  PyThread_tss_set(&_PyRuntime.gilstate.autoTSSkey, state);
#endif
}
