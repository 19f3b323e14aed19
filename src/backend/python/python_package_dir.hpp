// kloop backend/python: where an installed Python package lies, for the [build] include_dirs
// entries of the form { python_package = "cutlass_library", path = "source/include" } (CUTLASS's
// and CuTe's headers as the PyPI package nvidia-cutlass installs them).
//
// The op's interpreter (choose_interpreter: $KLOOP_PYTHON, [python] interpreter, python3) runs
// importlib.util.find_spec on the top-level name: that locates the package's directory without
// importing it, so none of the package's code runs. The answer is memoised per (interpreter,
// package) for the life of the process: every build of a loop asks the same question.
//
// The build cache needs nothing more: the resolved directory is an -I of the build key, and every
// header nvcc read from it is in the entry's dependency list, so another installed version of
// the package (other bytes) is another build.
#pragma once
#include <filesystem>
#include <string>

#include "spec/op_spec.hpp"

namespace kloop::backend::python {

// The absolute directory of an include_dirs entry: a plain one as written; a package one as
// <the package's directory>/<path>. Throws kloop::spec_error naming op.toml, the entry's line
// and field when the interpreter cannot be started, does not find the package (with the
// interpreter and how to install it), or the directory is not there.
[[nodiscard]] std::filesystem::path resolve_include_dir(const spec::op_spec& spec, const spec::include_dir& dir);

}  // namespace kloop::backend::python
