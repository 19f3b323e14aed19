// kloop spec: integer expressions over named dims ("B*T", "N+1", "ceil_div(T, 64)").
//
// Responsibility: parse once, evaluate per shape. Grammar (whitespace ignored):
//   expr   := term (('+'|'-') term)*
//   term   := unary (('*'|'/'|'%') unary)*          '/' is floor division, '%' its remainder
//   unary  := '-' unary | atom
//   atom   := integer | name | name '(' expr (',' expr)* ')' | '(' expr ')'
//   functions: min(a,b) max(a,b) ceil_div(a,b)
// Names are dims ([A-Za-z_][A-Za-z0-9_]*). Evaluation is in int64 and throws on overflow,
// division by zero or an unknown name.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kloop::spec {

using dim_env = std::map<std::string, std::int64_t, std::less<>>;

class dim_expr {
public:
    struct node;

    dim_expr();
    // Throws std::invalid_argument with a message naming the offending position.
    static dim_expr parse(const std::string& text);
    // Throws std::invalid_argument (unknown dim, division by zero) or std::overflow_error.
    [[nodiscard]] std::int64_t eval(const dim_env& env) const;
    [[nodiscard]] const std::string& get_text() const noexcept { return m_text; }
    // Every dim name the expression refers to, sorted, without duplicates.
    [[nodiscard]] std::vector<std::string> get_names() const;

private:
    std::string m_text;
    std::shared_ptr<const node> m_root;
};

}  // namespace kloop::spec
