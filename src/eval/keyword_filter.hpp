// kloop eval: pytest-style keyword expressions for --gate-k ("n256 or n1000", "not d4096").
//
// Responsibility: parse an expression of words joined by `and`, `or`, `not` and parentheses;
// a word matches a name when it is a case-insensitive substring of it (pytest -k semantics).
// A malformed expression throws kloop::usage_error naming --gate-k.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace kloop::eval {

class keyword_filter {
public:
    struct node;

    // Throws usage_error on a malformed expression.
    static keyword_filter parse(std::string_view expression);
    [[nodiscard]] bool matches(std::string_view name) const;
    [[nodiscard]] const std::string& get_text() const noexcept { return m_text; }

private:
    std::string m_text;
    std::shared_ptr<const node> m_root;
};

}  // namespace kloop::eval
