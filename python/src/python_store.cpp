// A ranks::Store over a Python store object with torch's store methods (torch.distributed's
// TCPStore, FileStore, HashStore, PrefixStore, or anything with the same methods): the store
// torch hands a process-group backend, through which ranks' real backends then rendezvous.
// Every call takes the GIL (ranks' backends call from any thread; the store's own methods
// release it while they wait). A Python exception becomes ranks' Timeout when it reports a
// timeout (torch raises DistStoreError saying so), RendezvousError otherwise, with its text.

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>

#include "bindings.hpp"
#include "ranks/errors.hpp"

namespace ranks::python {

namespace {

class PythonStore final : public Store {
 public:
  explicit PythonStore(py::object store) : store_(std::move(store)) {}
  ~PythonStore() override {
    // Freed last by whichever thread drops the world: take the GIL to drop the reference, unless
    // the interpreter is gone (then the object went with it).
    if (!Py_IsInitialized()) {
      store_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    store_ = py::object();
  }
  PythonStore(const PythonStore&) = delete;
  PythonStore& operator=(const PythonStore&) = delete;

 private:
  // Defined before the methods below: they deduce call()'s return type.
  static py::bytes bytes_of(const std::vector<uint8_t>& value) {
    return py::bytes(reinterpret_cast<const char*>(value.data()), value.size());
  }
  static std::vector<uint8_t> vector_of(const py::handle& value) {
    const auto text = value.cast<std::string>();
    return {text.begin(), text.end()};
  }

  template <class F>
  auto call(const char* method, F&& body) {
    py::gil_scoped_acquire gil;
    try {
      return body();
    } catch (py::error_already_set& e) {
      const std::string text = e.what();
      std::string lower = text;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      const std::string message = "the process group's store (" + type_name() + "): " + method +
                                  " failed: " + text;
      if (lower.find("timeout") != std::string::npos ||
          lower.find("timed out") != std::string::npos) {
        throw Timeout(message);
      }
      throw RendezvousError(message);
    }
  }
  std::string type_name() const {
    return py::str(py::type::handle_of(store_).attr("__name__")).cast<std::string>();
  }

 public:
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    call("set", [&] { store_.attr("set")(key, bytes_of(value)); });
  }
  std::vector<uint8_t> get(const std::string& key) override {
    return call("get", [&] { return vector_of(store_.attr("get")(key)); });
  }
  int64_t add(const std::string& key, int64_t delta) override {
    return call("add", [&] { return store_.attr("add")(key, delta).cast<int64_t>(); });
  }
  std::vector<uint8_t> compare_set(const std::string& key, const std::vector<uint8_t>& expected,
                                   const std::vector<uint8_t>& desired) override {
    return call("compare_set", [&] {
      return vector_of(store_.attr("compare_set")(key, bytes_of(expected), bytes_of(desired)));
    });
  }
  bool check(const std::vector<std::string>& keys) override {
    return call("check", [&] { return store_.attr("check")(keys).cast<bool>(); });
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    call("wait", [&] { store_.attr("wait")(keys, timeout); });
  }
  bool delete_key(const std::string& key) override {
    return call("delete_key", [&] { return store_.attr("delete_key")(key).cast<bool>(); });
  }
  int64_t num_keys() override {
    return call("num_keys", [&] { return store_.attr("num_keys")().cast<int64_t>(); });
  }

 private:
  py::object store_;
};

}  // namespace

std::shared_ptr<Store> store_of(py::handle store) {
  if (store.is_none()) return nullptr;
  for (const char* method : {"set", "get", "add", "compare_set", "check", "wait", "delete_key",
                             "num_keys"}) {
    if (!py::hasattr(store, method)) {
      throw InvalidArgument(
          "store must have torch.distributed.Store's methods (set, get, add, compare_set, "
          "check, wait, delete_key, num_keys); a " +
          py::str(py::type::handle_of(store).attr("__qualname__")).cast<std::string>() +
          " has no " + method);
    }
  }
  return std::make_shared<PythonStore>(py::reinterpret_borrow<py::object>(store));
}

}  // namespace ranks::python
