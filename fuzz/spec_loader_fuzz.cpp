// libFuzzer target: kloop's op.toml loader (spec::parse_op_spec) on arbitrary text.
//
// Any text must end in a spec (valid) or a kloop::spec_error / kloop::usage_error naming the
// problem: every other exception (internal_error, std::out_of_range, bad_alloc, ...), a crash, a
// hang or a sanitizer report is a finding. Paths in the text resolve against a directory that does
// not exist, so a spec that names files is refused for them, never read from the fuzzing machine.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "spec/spec_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        (void)kloop::spec::parse_op_spec(text, "/nonexistent-kloop-fuzz/op.toml", "/nonexistent-kloop-fuzz");
    } catch (const kloop::spec_error&) {
    } catch (const kloop::usage_error&) {
    }
    return 0;
}
