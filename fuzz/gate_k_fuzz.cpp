// libFuzzer target: the --gate-k keyword filter (eval::keyword_filter) on arbitrary text.
//
// Any expression must parse, or be refused with a kloop::usage_error naming --gate-k; a parsed
// one must answer for any name. Anything else — another exception, a crash, unbounded recursion
// (a stack overflow under ASan), a sanitizer report — is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "eval/keyword_filter.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const auto f = kloop::eval::keyword_filter::parse(text);
        (void)f.matches("fwd/n4096_d1024");
        (void)f.matches("");
        (void)f.matches(text);
    } catch (const kloop::usage_error&) {
    }
    return 0;
}
